#!/bin/sh
# s42 call 7: which cuBLASLt case fails and why (lt2/'s case 125: 150 tokens, 128 x 2,048, NaN/Inf, y's rows
# 132 apart) - a test_ops_cuda build with seven variants (.gpu/test_ops_diag: without NaN/Inf, y's rows 128
# apart, 256 rows, K 1,024, 144 tokens, 512 rows); then the whole suite on lt2/'s pack (its test_ops_cuda has
# the failing case; every other test on the default path). Pack: lt2/'s bundle + test_ops_diag.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin diag
timeout 200 .gpu/test_ops_diag > "$R/ops-diag.txt" 2>&1; echo "test_ops_diag exit $?"
grep -E "act_quant" "$R/ops-diag.txt" | grep -E " n=(150|152|200|144) " | grep -E "out=(128|256|512) "
grep -E "FAIL" "$R/ops-diag.txt" | cut -c1-220 | head -12
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
call_end

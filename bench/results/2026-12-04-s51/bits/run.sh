#!/bin/sh
# s51: the mixing in hc_post everywhere (the default made 2 after final/): the logits against fb7cf56's build
# (v69) byte for byte, prefill and decode, both numerics, and the prefill repeated; test_ops_cuda.
# Pack: BASE=<build-gpu of fb7cf56> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bits
sh scripts/gpu_bits.sh
timeout 300 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1; echo "test_ops_cuda exit $?"
grep -E "hc_post_next|FAIL|NOT CAUGHT|PASSED" "$R/ops_cuda.txt" | head -20; gzip -9 -n "$R/ops_cuda.txt"
call_end

#!/bin/sh
# Prepared in s43 (NOT run: the device time ran out), the next session's first call (~330 s). What s43 changed
# and checked only in part: k_norm_rope_w (prefill's q norm a warp a row; test_ops_cuda and gpu_bits passed,
# not the whole suite), wo_a's BF16 GEMM under --prefill-gemm cublaslt (test_ops_cuda passed), c_free taking a
# weight out of the backend's list (NOT run). This call: test_ops_cuda under memcheck (expect ERROR SUMMARY 0:
# ab2/'s 1,858 were c_destroy's second cudaFree of the test's weights), then the whole suite. Pack:
# BASE=<any build since 584bcea> NOTOK=1 sh scripts/gpu_pack.sh. Then, as a second call, the head figures:
# sh scripts/gpu_head.sh (decode, both prefills warm, dsv4 serve at 1 / 8 / 16 / 64).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify-next
timeout 120 compute-sanitizer --tool memcheck --kernel-name kns=k_norm_rope_w --error-exitcode 3 $B/test_ops_cuda \
  > "$R/san-ops.txt" 2>&1; echo "memcheck test_ops_cuda exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$R/san-ops.txt" | tail -3
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
call_end

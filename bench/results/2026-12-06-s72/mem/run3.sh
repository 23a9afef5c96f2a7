#!/bin/sh
# s72 mem/ third call, the same warm machine: test_work_reserve under compute-sanitizer memcheck (API errors not
# reported: its impossible case's cudaMalloc fails on purpose).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wrs
env DSV4_SRC="$PWD" timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 \
  $B/test_work_reserve > "$R/san-work_reserve.txt" 2>&1
echo "memcheck test_work_reserve exit $?"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$R/san-work_reserve.txt"
call_end

#!/bin/sh
# s72 mem/ second call: test_work_reserve with its impossible case at 131,072 tokens a step.
# Run: sh scripts/gpu_multi.sh mem=bench/results/2026-12-06-s72/mem/run2.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wrt
env DSV4_SRC="$PWD" timeout 200 $B/test_work_reserve > "$R/work_reserve.txt" 2>&1
echo "work_reserve exit $?" | tee -a "$R/work_reserve.txt"
grep -E "growths|open at|PASSED|FAILED" "$R/work_reserve.txt"
call_end

#!/bin/sh
# s46 call 6 (the same pack as lds/): compute-sanitizer's memcheck and racecheck on k_attn_pvw (its ring reused
# as the epilogue's staging) and memcheck on k_attn_md16 (registers up to 768 rows, the loops past) at 64
# tokens - bench_kernels' attention cases (CSA 640 rows; HCA 160, 384 and 1,152: md16's both paths).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin san
call_memcheck k_attn_pvw "--attn-only --batch 64 --reps 1"
call_memcheck k_attn_md16 "--attn-only --batch 64 --reps 1"
timeout 120 compute-sanitizer --tool racecheck --kernel-name kns=k_attn_pvw --error-exitcode 3 $B/bench_kernels \
  --attn-only --batch 16 --reps 1 > "$R/race-k_attn_pvw.txt" 2>&1
echo "== racecheck k_attn_pvw exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$R/race-k_attn_pvw.txt" | tail -2
call_end
# call 7 (the same pack): the same racecheck on the base build (9b93896's k_attn_pvw), to tell the tool's limits
# from the change's: racecheck on the new kernel stopped at an "Internal Sanitizer Error" (a hardware exception)
#   timeout 120 compute-sanitizer --tool racecheck --kernel-name kns=k_attn_pvw --error-exitcode 3 \
#     $B/bench_kernels.base --attn-only --batch 16 --reps 1

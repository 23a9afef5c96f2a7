#!/bin/sh
# s72 rev/ (the review's mend, 7f29b1ba: one scratch growth for steps and the reservation): test_work_reserve and
# test_gpu_vs_cpu on the GPU.
# Run: sh scripts/gpu_multi.sh rev=bench/results/2026-12-06-s72/rev/run.sh
# Pack: AS=rev sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rev
for t in work_reserve gpu_vs_cpu; do
  env DSV4_SRC="$PWD" timeout 150 $B/test_$t > "$R/$t.txt" 2>&1
  echo "$t exit $?" | tee -a "$R/$t.txt"
  grep -E "growths|open at|PASSED|FAILED" "$R/$t.txt" | head
  gzip -9 -n "$R/$t.txt"
done
call_end

#!/bin/sh
# On the GPU machine (after scripts/gpu_pack.sh, with BASE=<a build-gpu of an earlier commit> for the logits
# check): the check a kernel change runs before it lands - gpu_suite.sh without timings, with the quick
# memchecks and the Flash-shaped ones (and, with a base build, the logits against its byte for byte) - into
# $OUT (suite.txt and the suite's logs, gzipped), printing the lines that say whether it passed. Exits with
# the suite's status. Every s24-s27 call that landed a kernel wrote these lines into its run.sh.
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout "${VERIFY_TIMEOUT:-300}" sh scripts/gpu_suite.sh > "$OUT/suite.txt" 2>&1
rc=$?
if [ "$rc" -eq 124 ]; then
  # cut: a nested timeout (gpu_suite.sh's `timeout 240 compute-sanitizer ...`) runs its command in a process group
  # of its own, which this timeout's kill does not reach - left alone, a memcheck ran on beside the call's next
  # steps (s60 mrg/: the timings after it off by up to 2x)
  pkill -f 'compute-sanitizer|[.]gpu/(dsv4|bench_|test_)' 2>/dev/null
  sleep 2
  pkill -9 -f 'compute-sanitizer|[.]gpu/(dsv4|bench_|test_)' 2>/dev/null
  echo "suite cut at ${VERIFY_TIMEOUT:-300} s: what it left running stopped" >> "$OUT/suite.txt"
fi
# gpu_suite.sh's status is its last command's: a failed test, a logits difference or a memcheck error earlier
# in it did not show there (s42's diag/ printed "suite rc=0" over three failed test_ops_cuda passes)
if [ "$rc" -eq 0 ] && grep -qE '\[  FAILED  \]|exit [1-9]|DIFFERENT|ERROR SUMMARY: [1-9]|[1-9][0-9]* (failed|different)' "$OUT/suite.txt"; then
  rc=1
fi
echo "suite rc=$rc" | tee -a "$OUT/suite.txt"
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|differ" "$OUT/suite.txt" | head -50
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda overlap_cuda prefix_cuda work_reserve ep_cuda sanitizer; do
  if [ -f "$OUT/$f.txt" ]; then gzip -9 -n -f "$OUT/$f.txt"; fi
done
gzip -9 -n -f "$OUT/suite.txt"
exit $rc

#!/bin/sh
# s72 wr/ again on the same warm machine: the two tests run.sh's first try ran with the environment after `timeout`
# (exit 127: not run) - golden on the GPU and expert parallelism on CUDA ranks.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wr2
for t in golden_cuda:test_golden ep_cuda:test_ep; do
  env DSV4_SRC="$PWD" DSV4_TEST_BACKEND=cuda timeout 200 $B/${t#*:} > "$R/${t%%:*}.txt" 2>&1
  echo "${t%%:*} exit $?" | tee -a "$R/${t%%:*}.txt"
  grep -E "max \|err\||PASSED|FAILED|skipped" "$R/${t%%:*}.txt" | head -12
  gzip -9 -n "$R/${t%%:*}.txt"
done
call_end

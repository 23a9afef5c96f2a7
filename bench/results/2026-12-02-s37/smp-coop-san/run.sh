#!/bin/sh
# s37 call 11 (wip/smp-coop): the cooperative sampler under compute-sanitizer - memcheck and racecheck of
# test_sample_cuda's few settings at 129,280 ids (DSV4_SAMPLE_QUICK=3: 6 rows x 22 blocks, cooperative), and
# memcheck of test_overlap. Pack: NOTOK=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin smp-coop-san
for t in memcheck racecheck; do
  DSV4_SRC=$PWD DSV4_SAMPLE_QUICK=3 timeout 200 compute-sanitizer --tool $t --error-exitcode 3 $B/test_sample_cuda \
    > $R/san-$t.txt 2>&1
  echo "== $t exit $?"; grep -E "agree|SUMMARY|PASSED|FAILED" $R/san-$t.txt | tail -4
done
call_end

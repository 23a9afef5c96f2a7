#!/bin/sh
# s27 call 10: the experts' five-block path by default from 4 tokens (moe16_nob) against main at 153e5fd
# (*.base): the suite with memchecks (its third op pass forces DSV4_MOE_NOB=1), the logits against main's,
# decode at batch 8 / 16 new / base (3 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r10; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|differ" $R/suite.txt | head -50
AB_REPEAT=3 AB_DECODE=32 timeout 120 sh scripts/gpu_ab.sh "b8:--batch 8" "b16:--batch 16"
cat $R/ab.txt
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda ep_cuda sanitizer; do
  [ -f $R/$f.txt ] && gzip -9 -n $R/$f.txt; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

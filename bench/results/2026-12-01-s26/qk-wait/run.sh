#!/bin/sh
# s26 call 5: k_attn_qk copies the step's own BF16 rows (packed by k_attn_qpack, the kernel before it) after
# griddepcontrol.wait instead of before (a race in the PDL chain: qpack lets qk start before its blocks have
# packed); the cached rows still before. The suite with memchecks (the built-in choices: qk on every
# tensor-core attention call) and the logits against 7dec4dd's build (*.base); decode new / base at batch 1 / 16
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|differ" $R/suite.txt | head -50
AB_REPEAT=3 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda ep_cuda sanitizer; do
  [ -f $R/$f.txt ] && gzip -9 -n $R/$f.txt; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

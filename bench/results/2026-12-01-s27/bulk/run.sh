#!/bin/sh
# s27 call 6: wip/one-bulk (k_attn_one: each cached row one bulk copy (cp.async.bulk on an mbarrier) into rows at
# a padded stride, the rows of each 8 permuted so both fragment patterns meet distinct bank groups; the
# mbarrier helpers moved from wg8.cu to common.cuh) against main at 53c1352 (*.base, the build of e9d0c45).
# The suite with memchecks (k_attn_one at every 1-token call; test_ops_cuda compares every choice bit for
# bit), the logits against main's; the attention at batch 1 new / base; decode at batch 1 and 1 x 32k (4 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|differ" $R/suite.txt | head -50
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 60 $c --attn-only --batch 1 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | awk '{print $1,$2,$3,$4,$5,$7}'
done
AB_REPEAT=4 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b1c32k:--batch 1 --context 32768"
cat $R/ab.txt
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda ep_cuda sanitizer; do
  [ -f $R/$f.txt ] && gzip -9 -n $R/$f.txt; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

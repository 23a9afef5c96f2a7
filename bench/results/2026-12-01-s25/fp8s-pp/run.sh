#!/bin/sh
# call 1: k_mma_fp8s's step-ahead activations in two register sets (even / odd steps: no copy at the step's
# end, which the compiler placed right after the loads, so every step waited an L2 round trip), and a token
# past n not read; against d6420fe (*.base): the suite with a memcheck of Flash's shapes (logits byte for
# byte), bench_kernels --linear-only at batch 1 / 8 new / base three times alternating, decode new / base at
# batch 1 / 8.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -50
for i in 1 2 3; do for v in new base; do
  bk=$B/bench_kernels; [ $v = base ] && bk=$B/bench_kernels.base
  timeout 60 $bk --linear-only --batch 1,8 > $R/lin-$v-$i.txt 2>&1
  echo "== $v run $i"; grep -iE "wo_a|wq_b|wo_b|wq_a|wkv" $R/lin-$v-$i.txt | cut -c1-120
done; done
AB_REPEAT=3 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

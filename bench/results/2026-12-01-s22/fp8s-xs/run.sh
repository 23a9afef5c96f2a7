#!/bin/sh
# call 5: k_mma_fp8s (wo_a at batch 1-8) loading a step's activation scales at the step's top instead of where
# they are used (ncu, b1-linears/: a third of its stalls on global loads, every step waiting for an L2 round
# trip), against 025ca55 (*.base): the suite with the base's logits byte for byte, the linears of both builds
# at batch 1 / 8 / 16, decode new / base alternating at batch 1 / 16 / 64
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for v in bench_kernels bench_kernels.base; do
  timeout 150 $B/$v --linear-only --batch 1,8,16 --json $R/lin-$v.json > $R/lin-$v.txt 2>&1
  echo "== $v"; grep -E "wo_a" $R/lin-$v.txt | head -6
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 b=$3
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  timeout 60 $c -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2 3; do
  for b in 1 16 64; do for v in new base; do run b$b-$v-$i $v $b; done; done
done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

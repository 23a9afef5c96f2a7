#!/bin/sh
# call 11: k_mma_fp8 with hi + lo activations (plain numerics' FP8 linears, wo_a in reference numerics) loads B
# where it is used at up to two n tiles, not a group ahead (128 registers, no spill, four blocks an SM; wo-a-loop/'s
# vn2): the suite (logits against 76cf0b2 byte for byte, tests, quick memchecks), then against 76cf0b2 (*.base) in
# the same call: bench_kernels --linear-only at 16 tokens, decode steps at batch 16 / 64 / 1 (reference) and 16
# (plain), alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r11; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 330 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for i in 1; do
for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 100 $K --linear-only --batch 16 > $R/bk-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "FP8" $R/bk-$v-$i.txt
done
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for b in 16 64 1; do run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b; done
done
BC="-m /tmp/f8 --backend cuda --fill-random --numerics plain"
for i in 1 2; do run p16-new-$i $B/bench_cpu 16; run p16-base-$i $B/bench_cpu.base 16; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 7: the BF16 activation packs write one plane in reference numerics (k_mma_pack_bf16<1>, k_wgbf_pack<1>:
# k_mma_bf16<.., 1> / k_wgbf<1> read only BF16(x)) and DSV4_MOE_TILES_Y (the suite runs test_ops_cuda with two
# expert tiles a k_moe16 launch): the suite (logits against 7558c67 byte for byte, tests, quick memchecks), then
# against 7558c67 (*.base) in the same call: bench_kernels --linear-only at 16 / 64 tokens, decode steps at
# batch 16 / 64 / 1, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 330 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for i in 1 2; do
for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 100 $K --linear-only --batch 16,64 > $R/bk-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "BF16" $R/bk-$v-$i.txt
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
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 9: reference numerics' BF16 linears on BF16(x) alone (k_mma_bf16<.., 1>, k_wgbf np = 1; the CPU rounds x
# too): the GPU suite (logits against aa06163 byte for byte first, tests, quick memchecks), then against
# aa06163 (*.base) in the same call: bench_kernels --linear-only, decode steps at batch 1 / 16 / 64, a
# 4,096-token prefill, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r9; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 330 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 100 $K --linear-only --batch 1,16,64 > $R/bk-$v.txt 2>&1
  echo "== $v"; grep -E "BF16" $R/bk-$v.txt
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for v in new base; do
    C=$B/bench_cpu; [ $v = base ] && C=$B/bench_cpu.base
    timeout 60 $C $BC --prompt 4096 --decode 2 > $R/pf-$v-$i.txt 2>&1; echo "pf-$v-$i: $(grep -m1 '^model' $R/pf-$v-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
  done
  for b in 1 16 64; do run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b; done
done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

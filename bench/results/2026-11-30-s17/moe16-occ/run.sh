#!/bin/sh
# call 4: k_moe16 with the activations' group scales loaded a group ahead, stage rows of 64 bytes (swizzled,
# no padding) and the warps' sums through the rings: four blocks an SM instead of three. Against the base build
# 874ac0c (*.base) in the same call: test_ops_cuda, golden, GPU vs CPU; bench_kernels (experts, linears) at
# batch 1 / 16 / 64; decode steps and a 4k prefill alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -n1 $R/ops.txt; grep -E "FAIL" $R/ops.txt | head
( DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?" >> $R/golden.txt ); tail -n1 $R/golden.txt
( DSV4_SRC=$PWD $B/test_gpu_vs_cpu > $R/gvc.txt 2>&1; echo "gvc exit $?" >> $R/gvc.txt ); tail -n1 $R/gvc.txt
for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 150 $K --batch 1,16,64 > $R/bk-$v.txt 2>&1
  echo "== $v"; grep -E "^experts|lm head|wo_a" $R/bk-$v.txt
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16 64; do
  run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b
done; done
for i in 1 2; do for v in new base; do
  bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
  timeout 40 $bin $BC --prompt 4096 --decode 2 > $R/pf-$v-$i.txt 2>&1; echo "pf-$v-$i: $(grep -m1 '^model' $R/pf-$v-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
done; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

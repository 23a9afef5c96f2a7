#!/bin/sh
# call 2: k_mma_fp8's scale index once per group (the compiler kept four divisions) and, at two n tiles
# (9-16 tokens), the activations' fragments loaded a group ahead in k_mma_fp8 and k_mma_bf16 (DSV4_MMA_PF2=0:
# without), against the base build 874ac0c (*.base) in the same call: test_ops_cuda, bench_kernels' linears at
# batch 1 / 8 / 16, decode steps alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -n1 $R/ops.txt; grep -E "FAIL" $R/ops.txt | head
( DSV4_MMA_PF2=0 $B/test_ops_cuda > $R/ops-pf0.txt 2>&1; echo "ops exit $?" >> $R/ops-pf0.txt ) ; tail -n1 $R/ops-pf0.txt
( DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?" >> $R/golden.txt ); tail -n1 $R/golden.txt
for v in new pf0 base; do
  case $v in new) K="$B/bench_kernels";; pf0) K="env DSV4_MMA_PF2=0 $B/bench_kernels";; base) K="$B/bench_kernels.base";; esac
  timeout 120 $K --linear-only --batch 1,8,16 > $R/lin-$v.txt 2>&1
  echo "== $v"; grep -E "wo_a|lm head|wq_a|shared w1|gate|cmp wkv" $R/lin-$v.txt
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3; shift 3
  timeout 40 env "$@" $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 8 16; do
  run b$b-new-$i $B/bench_cpu $b X=1; run b$b-pf0-$i $B/bench_cpu $b DSV4_MMA_PF2=0; run b$b-base-$i $B/bench_cpu.base $b X=1
done; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 9: k_moe16 blocks taking several row blocks in turn, the ring running on across them (moe16_nrb;
# DSV4_MOE_NRB forces it): test_ops_cuda by default and with 3 and 2 row blocks a block (the small shapes
# never take more than one by themselves), golden; decode at batch 1 / 16 / 64 against 5c5f4ff (*.base),
# alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r9; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -n1 $R/ops.txt; grep -E "FAIL" $R/ops.txt | head -5
( DSV4_MOE_NRB=3 DSV4_MOE_NTT=2 $B/test_ops_cuda > $R/ops-nrb3.txt 2>&1; echo "ops nrb3 ntt2 exit $?" >> $R/ops-nrb3.txt ) ; tail -n1 $R/ops-nrb3.txt; grep -E "FAIL" $R/ops-nrb3.txt | head -5
( DSV4_MOE_NRB=2 $B/test_ops_cuda > $R/ops-nrb2.txt 2>&1; echo "ops nrb2 exit $?" >> $R/ops-nrb2.txt ) ; tail -n1 $R/ops-nrb2.txt; grep -E "FAIL" $R/ops-nrb2.txt | head -5
( DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda DSV4_MOE_NRB=3 $B/test_golden > $R/golden.txt 2>&1; echo "golden nrb3 exit $?" >> $R/golden.txt ); tail -n1 $R/golden.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 30 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for b in 16 64 1; do run b$b-new $B/bench_cpu $b; run b$b-base $B/bench_cpu.base $b; done
run b16-new-2 $B/bench_cpu 16; run b16-base-2 $B/bench_cpu.base 16
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

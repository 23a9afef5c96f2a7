#!/bin/sh
# call 8: the review's mends (the walking weighted sum's row list bounded so static + dynamic shared memory
# stay within 48 KB; DSV4_WG8_N64 read once): test_ops_cuda, golden, a 4k prefill and batch-64 decode
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -n1 $R/ops.txt; grep -E "FAIL|fail" $R/ops.txt | grep -v harness | head
( DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?" >> $R/golden.txt ); tail -n1 $R/golden.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
timeout 40 $B/bench_cpu $BC --prompt 4096 --decode 2 > $R/pf.txt 2>&1; grep -m1 "^model" $R/pf.txt | sed 's/.*prefill //; s/ (graphs.*//' | tee $R/summary.txt
timeout 40 $B/bench_cpu $BC --prompt 16 --decode 32 --batch 64 > $R/d64.txt 2>&1; grep -m1 "^model" $R/d64.txt | sed 's/.*decode //; s/ (graphs.*//' | tee -a $R/summary.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

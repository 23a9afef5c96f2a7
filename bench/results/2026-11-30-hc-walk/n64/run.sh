#!/bin/sh
# call 4: k_wg8 with 64-token tiles above 64 tokens, every launch (DSV4_WG8_N64=0: the 32-token tiles, the base):
# test_ops_cuda (default and DSV4_WG8_CHUNK=64), the linears at 1,024 / 4,096 tokens and a 4k prefill, A/B
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -2 $R/ops.txt; grep -E "FAIL|fail" $R/ops.txt | grep -v harness | head -20
( DSV4_WG8_CHUNK=64 $B/test_ops_cuda > $R/ops64.txt 2>&1; echo "ops chunk64 exit $?" >> $R/ops64.txt ) ; tail -1 $R/ops64.txt; grep -E "FAIL|fail" $R/ops64.txt | grep -v harness | head -20
( DSV4_SRC=$PWD $B/test_gpu_vs_cpu > $R/gvc.txt 2>&1; echo "gvc exit $?" >> $R/gvc.txt ); tail -1 $R/gvc.txt
for v in 1 0; do DSV4_WG8_N64=$v timeout 120 $B/bench_kernels --linear-only --batch 1024,4096 > $R/lin-n64-$v.txt 2>&1; done
grep -iE "wq_b|wo_b|shared|wq_a" $R/lin-n64-1.txt | head -12; echo ---; grep -iE "wq_b|wo_b|shared|wq_a" $R/lin-n64-0.txt | head -12
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1; v=$2; shift 2
  DSV4_WG8_N64=$v timeout 60 $B/bench_cpu $BC "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do run pf-n64-$i 1 --prompt 4096 --decode 2; run pf-n32-$i 0 --prompt 4096 --decode 2; done
run pf-n64-prof 1 --prompt 4096 --decode 2 --profile F; grep -A12 "^prefill:" $R/pf-n64-prof.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

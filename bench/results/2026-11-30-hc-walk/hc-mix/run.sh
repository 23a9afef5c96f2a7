#!/bin/sh
# call 2 (918596f + 4c2dc22 before commit; base: 253b76e as bench_cpu.base, gpu_pack.sh BASE=...):
# F2FP .H1 halves + k_hc_mix rewrite: test_ops_cuda, golden, gpu_vs_cpu; decode b1/b16 and prefill 4k
# alternating with the base; ncu of a 1,024-token prefill, both builds
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -3 $R/ops.txt; grep -E "FAIL|fail" $R/ops.txt | head -20
( DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?" >> $R/golden.txt ); tail -2 $R/golden.txt
( DSV4_SRC=$PWD $B/test_gpu_vs_cpu > $R/gvc.txt 2>&1; echo "gvc exit $?" >> $R/gvc.txt ); tail -2 $R/gvc.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1; bin=$2; shift 2
  timeout 60 $B/$bin $BC "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16; do run d$b-new$i bench_cpu --prompt 16 --decode 32 --batch $b; run d$b-base$i bench_cpu.base --prompt 16 --decode 32 --batch $b; done; done
for i in 1 2; do run pf-new$i bench_cpu --prompt 4096 --decode 2; run pf-base$i bench_cpu.base --prompt 4096 --decode 2; done
run pf-profile bench_cpu --prompt 4096 --decode 2 --profile F
grep -A12 "^prefill:" $R/pf-profile.txt
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $B/bench_cpu $BC --prompt 1024 --decode 1 --batch 1 --no-graphs > $R/ncupf.txt 2>&1
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $B/bench_cpu.base $BC --prompt 1024 --decode 1 --batch 1 --no-graphs > $R/ncupf-base.txt 2>&1
python3 bench/ncu_kernel_table.py $R/ncupf.txt $R/ncupf-base.txt | grep -E "==|hc_|moe16|k_wg8 |mma_fp8|moe_wg"
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

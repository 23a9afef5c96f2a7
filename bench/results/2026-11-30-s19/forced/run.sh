#!/bin/sh
# call 4: 7558c67, decode at batch 16 (and 1, 64) with the prefill kernels forced (DSV4_WGF8=1: wo_a on k_wgf8;
# DSV4_WGBF=1: the BF16 linears on k_wgbf; the same bits) against the default, alternating, three rounds; and
# bench_kernels --linear-only at 16 tokens with DSV4_WGF8=1
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 e=$2 b=$3
  env $e timeout 40 $B/bench_cpu $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2 3; do
  for b in 16 1 64; do
    run b$b-none-$i X=0 $b
    run b$b-wgf8-$i DSV4_WGF8=1 $b
    run b$b-wgbf-$i DSV4_WGBF=1 $b
  done
done
DSV4_WGF8=1 timeout 100 $B/bench_kernels --linear-only --batch 1,16,64 > $R/bk-wgf8.txt 2>&1
timeout 100 $B/bench_kernels --linear-only --batch 1,16,64 > $R/bk-none.txt 2>&1
grep -E "wo_a" $R/bk-*.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 6: decode with the prefill kernels forced (same bits): k_wgf8 (wo_a; DSV4_WGF8=1), k_wgbf (BF16 linears
# and the head; DSV4_WGBF=1), both, against the default, batches 1 / 8 / 16 / 64, alternating; then ncu of b16 forced
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1; shift
  timeout 60 env "$@" $B/bench_cpu $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 8 16 64; do
  run b$b-def-$i DSV4_X=0; run b$b-f8-$i DSV4_WGF8=1; run b$b-bf-$i DSV4_WGBF=1; run b$b-both-$i DSV4_WGF8=1 DSV4_WGBF=1
done; done
DSV4_WGF8=1 DSV4_WGBF=1 timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $B/bench_cpu $BC --prompt 1 --decode 2 --batch 16 --no-graphs > $R/ncu16-forced.txt 2>&1
python3 bench/ncu_kernel_table.py --steps 3 $R/ncu16-forced.txt | head -14
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

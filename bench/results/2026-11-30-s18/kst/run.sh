#!/bin/sh
# call 3: k_moe16 with the warps' K groups interleaved (warp w: groups w, w + 4, ...: at a time the block's four
# warps read 256 contiguous bytes of each row instead of 64 bytes in four places 512 apart) against e0a1aa9
# (*.base: contiguous quarters of K) - a DRAM locality experiment (the bits of k_moe_wg's prefill no longer
# match this build's decode: no tests). bench_kernels --experts-only and decode steps at batch 1 / 16 / 64
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
for i in 1 2; do for v in base new; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 100 $K --experts-only --batch 1,16,64 > $R/bk-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "^experts" $R/bk-$v-$i.txt
done; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16 64; do
  run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b
done; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 4: k_moe16's DRAM locality, on top of the interleaved K groups (*.base: v3 of ../kst/): pf - the
# weights' cp.async with .L2::256B (an L2 miss fetches the aligned 256 bytes), gsw - the grid's row blocks
# along x (blocks launched together read neighbouring rows of one expert instead of one row block of many),
# both. bench_kernels --experts-only and decode steps at batch 1 / 16 / 64, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
tar xJf $B/var.tar.xz -C $B
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
for i in 1 2; do for v in base pf gsw both; do
  K=$B/bench_kernels.base; [ $v != base ] && K=$B/v_$v/bench_kernels
  timeout 100 $K --experts-only --batch 1,16,64 > $R/bk-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "^experts \(ref.\)|^experts \(MXFP4" $R/bk-$v-$i.txt
done; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16 64; do for v in base pf gsw both; do
  C=$B/bench_cpu.base; [ $v != base ] && C=$B/v_$v/bench_cpu
  run b$b-$v-$i $C $b
done; done; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

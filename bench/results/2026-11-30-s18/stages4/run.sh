#!/bin/sh
# call 8: k_moe16 / k_moe8w with a ring of four stages a warp (three groups ahead; reference decode's blocks then
# 70 KB: three an SM) against aa06163 (*.base, three stages): bench_kernels --experts-only and decode steps at
# batch 1 / 16 / 64, alternating (an experiment build: no tests)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
tar xJf $B/var.tar.xz -C $B
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
for i in 1 2; do for v in base st4; do
  K=$B/bench_kernels.base; [ $v != base ] && K=$B/v_$v/bench_kernels
  timeout 100 $K --experts-only --batch 1,16,64 > $R/bk-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "^experts" $R/bk-$v-$i.txt
done; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2; do for b in 1 16 64; do for v in base st4; do
  C=$B/bench_cpu.base; [ $v != base ] && C=$B/v_$v/bench_cpu
  timeout 40 $C $BC --prompt 16 --decode 32 --batch $b > $R/b$b-$v-$i.txt 2>&1
  echo "b$b-$v-$i: $(grep -m1 '^model ' $R/b$b-$v-$i.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
done; done; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 10: wo_a's kernel at 16 tokens (k_mma_fp8<2, LO>: 168 registers with a 16-byte spill, three blocks an SM,
# ncu: 37 % issue, 2.75 warps a scheduler, 421 instructions a group) against two throwaway variants of 76cf0b2
# (the same bits): vn1 runs LO launches of two n tiles as k_mma_fp8<1, LO> (two blocks per row tile, 118
# registers, four blocks an SM); vn2 keeps NTT = 2 but loads B where it is used instead of a group ahead in
# registers (PF off for LO: 128 registers, no spill, four blocks an SM). bench_kernels --linear-only --batch 16
# (plain numerics: every FP8 linear on the LO path) and decode at batch 16 (reference and plain), alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r10; rm -rf $R; mkdir -p $R; touch $R/.start
mkdir -p /tmp/var && tar xJf .gpu/var.tar.xz -C /tmp/var
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
bin() { case $1 in base) echo $B/$2;; *) echo /tmp/var/$1/$2;; esac; }
for i in 1 2; do
  for v in base vn1 vn2; do
    timeout 100 $(bin $v bench_kernels) --linear-only --batch 16 > $R/bk-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "FP8" $R/bk-$v-$i.txt | awk '{print $1, $2, $3, $4, $6, $8}'
  done
done
run() { n=$1 v=$2 num=$3
  timeout 40 $(bin $v bench_cpu) -m /tmp/f8 --backend cuda --fill-random --numerics $num --prompt 16 --decode 32 --batch 16 > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2 3; do
  for v in base vn1 vn2; do run b16-$v-$i $v reference; done
done
for i in 1 2; do
  for v in base vn1 vn2; do run p16-$v-$i $v plain; done
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 6: the routed experts' E8M0 scale copies (k_moe16's stages: 4 bytes a row a group, cp.async.ca) with an L2
# prefetch size: v128 (.L2::128B: an L2 miss fetches the row's aligned 128 bytes) and v256 (.L2::256B) against
# 7558c67 ($B, the same code without the hint), the same bits. bench_kernels --experts-only and decode at batch
# 16 / 1 / 64, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
mkdir -p /tmp/var && tar xJf .gpu/var.tar.xz -C /tmp/var
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
bin() { case $1 in base) echo $B/$2;; *) echo /tmp/var/$1/$2;; esac; }
for i in 1 2; do
  for v in base v128 v256; do
    timeout 100 $(bin $v bench_kernels) --experts-only --batch 1,16,64 > $R/bk-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "ref\.\)" $R/bk-$v-$i.txt
  done
done
run() { n=$1 v=$2 b=$3
  timeout 40 $(bin $v bench_cpu) $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2 3; do
  for b in 16 1 64; do
    for v in base v128 v256; do run b$b-$v-$i $v $b; done
  done
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

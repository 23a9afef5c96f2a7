#!/bin/sh
# wg8 fused quantisation (decode: the blocks quantise x themselves, no pack launch) vs DSV4_WG8_FUSE=0
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R
timeout 300 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "exit $?" >> $R/ops.txt
echo "ops fused: $(grep -E 'PASSED|exit' $R/ops.txt | tr '\n' ' ')"; grep -E "FAIL|fail" $R/ops.txt | head -20
DSV4_WG8_FUSE=0 timeout 300 $B/test_ops_cuda > $R/ops-nofuse.txt 2>&1; echo "exit $?" >> $R/ops-nofuse.txt
echo "ops nofuse: $(grep -E 'PASSED|exit' $R/ops-nofuse.txt | tr '\n' ' ')"; grep -E "FAIL|fail" $R/ops-nofuse.txt | head -20
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?"
for f in 1 0 1 0; do
  DSV4_WG8_FUSE=$f timeout 100 $B/bench_kernels --linear-only --batch 1,8 > $R/k-fuse$f.txt 2>&1
  echo "== fuse $f"; grep -E "FP8" $R/k-fuse$f.txt | awk '{printf "%s %s b%s %s | ", $1, $2, $(NF-14), $(NF-9)}' ; echo
done
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for b in 1 4 8 16; do
    for v in 1 0; do
      DSV4_WG8_FUSE=$v timeout 120 $B/bench_cpu -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b > $R/dec-b$b-f$v-$i.txt 2>&1
      echo "b$b fuse=$v ($i): $(grep -m1 '^model ' $R/dec-b$b-f$v-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
    done
  done
done
tar czf $OUT/r.tgz -C $R .

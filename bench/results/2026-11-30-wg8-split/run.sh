#!/bin/sh
# wg8: tile parts through global memory (counter) vs clusters; parts per SM
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R
timeout 300 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "exit $?" >> $R/ops.txt
echo "ops counter: $(grep -E 'PASSED|exit' $R/ops.txt | tr '\n' ' ')"; grep FAIL $R/ops.txt | head -20
DSV4_WG8_BPS=8 timeout 300 $B/test_ops_cuda > $R/ops8.txt 2>&1; echo "exit $?" >> $R/ops8.txt
echo "ops counter bps8: $(grep -E 'PASSED|exit' $R/ops8.txt | tr '\n' ' ')"; grep FAIL $R/ops8.txt | head -20
for v in "CLUSTER=1 BPS=4" "CLUSTER=0 BPS=4" "CLUSTER=0 BPS=8" "CLUSTER=0 BPS=2" "CLUSTER=1 BPS=4" "CLUSTER=0 BPS=4"; do
  set -- $v
  env DSV4_WG8_$1 DSV4_WG8_$2 timeout 100 $B/bench_kernels --linear-only --batch 1,8,16,64 > $R/k-$1-$2.txt 2>&1
  echo "== $v"; grep -E "FP8" $R/k-$1-$2.txt | cut -c1-26,74-90
done
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for b in 1 16; do
    for v in 1 0; do
      DSV4_WG8_CLUSTER=$v timeout 120 $B/bench_cpu -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b > $R/dec-b$b-c$v-$i.txt 2>&1
      echo "b$b cluster=$v ($i): $(grep -m1 '^model ' $R/dec-b$b-c$v-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
    done
  done
done
tar czf $OUT/r.tgz -C $R .

#!/bin/sh
# wg8 token tiles of 64 (DSV4_WG8_NMAX=64) against 32; where 4k prefill goes (op-family profile)
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R
DSV4_WG8_NMAX=64 timeout 300 $B/test_ops_cuda > $R/ops64.txt 2>&1; echo "exit $?" >> $R/ops64.txt
echo "ops nmax64: $(grep -E 'PASSED|exit' $R/ops64.txt | tr '\n' ' ')"; grep -E "FAIL|fail" $R/ops64.txt | grep -v harness | head -20
for v in 32 64 32 64; do
  DSV4_WG8_NMAX=$v timeout 100 $B/bench_kernels --linear-only --batch 64 > $R/k-n$v.txt 2>&1
  echo "== nmax $v"; grep -E "FP8" $R/k-n$v.txt | awk '{printf "%s %s %s | ", $1, $2, $(NF-9)}' ; echo
done
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for v in 32 64; do
    DSV4_WG8_NMAX=$v timeout 120 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/pf-n$v-$i.txt 2>&1
    echo "prefill 4k nmax $v ($i): $(grep -m1 '^model ' $R/pf-n$v-$i.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')"
    DSV4_WG8_NMAX=$v timeout 120 $B/bench_cpu -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch 64 > $R/d64-n$v-$i.txt 2>&1
    echo "b64 nmax $v ($i): $(grep -m1 '^model ' $R/d64-n$v-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
  done
done
timeout 200 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 --profile $R/profile-pf4k.json --profile-steps 1 > $R/profile-pf4k.txt 2>&1
sed -n '/^prefill/,$p' $R/profile-pf4k.txt | head -16
tar czf $OUT/r.tgz -C $R .

#!/bin/sh
# wg8 tokens per launch (DSV4_WG8_CHUNK) at a 4k prefill; tests with small launches
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R
DSV4_WG8_CHUNK=64 timeout 300 $B/test_ops_cuda > $R/ops-c64.txt 2>&1; echo "exit $?" >> $R/ops-c64.txt
echo "ops chunk 64: $(grep -E 'PASSED|exit' $R/ops-c64.txt | tr '\n' ' ')"; grep -E "FAIL|fail" $R/ops-c64.txt | grep -v harness | head
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for c in 256 1024 4096; do
    DSV4_WG8_CHUNK=$c timeout 120 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/pf-c$c-$i.txt 2>&1
    echo "prefill 4k chunk $c ($i): $(grep -m1 '^model ' $R/pf-c$c-$i.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')"
  done
done
DSV4_WG8_CHUNK=4096 timeout 200 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 --profile $R/profile-pf4k.json --profile-steps 1 > $R/profile-pf4k.txt 2>&1
sed -n '/^prefill/,$p' $R/profile-pf4k.txt | head -16
tar czf $OUT/r.tgz -C $R .

#!/bin/sh
# expert tiles unit by unit (B a unit ahead): NTT 4 without spills; tests with 4 forced, logits against
# the head's build with 4 forced, 4k prefill with 2 and 4 against the head's build (.base: 91092d6)
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R
DSV4_MOE_NTT=4 timeout 300 $B/test_ops_cuda > $R/ops-4.txt 2>&1; echo "exit $?" >> $R/ops-4.txt
echo "ops ntt=4: $(grep -E 'PASSED|exit' $R/ops-4.txt | tr '\n' ' ')"; grep -E "FAIL|fail" $R/ops-4.txt | grep -v harness | head
DSV4_MOE_NTT=4 OUT=$R sh scripts/gpu_bits.sh; echo "bits (ntt 4) exit $?"
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for v in n2 n4 base; do
    bin=$B/bench_cpu; e=DSV4_MOE_NTT=2; [ $v = n4 ] && e=DSV4_MOE_NTT=4; [ $v = base ] && bin=$B/bench_cpu.base && e=DSV4_X=0
    env $e timeout 120 $bin -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/pf-$v-$i.txt 2>&1
    echo "prefill 4k $v ($i): $(grep -m1 '^model ' $R/pf-$v-$i.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')"
  done
done
for v in n2 n4; do
  e=DSV4_MOE_NTT=2; [ $v = n4 ] && e=DSV4_MOE_NTT=4
  env $e timeout 120 $B/bench_cpu -m $m --prompt 2048 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/pf2k-$v.txt 2>&1
  echo "prefill 2k $v: $(grep -m1 '^model ' $R/pf2k-$v.txt | sed 's/.*prefill 2048 tokens each: //; s/  decode.*//')"
done
tar czf $OUT/r.tgz -C $R .

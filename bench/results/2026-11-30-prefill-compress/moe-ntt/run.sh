#!/bin/sh
# the F16 experts with tiles of 8 NTT pairs (NTT 2 / 4 at prefill): tests with NTT forced, logits against
# the base byte for byte, 4k prefill (auto = 4, forced 2) and decode against the base (.base: 6e16157)
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R
for v in def 2 4; do
  if [ $v = def ]; then timeout 300 $B/test_ops_cuda > $R/ops-$v.txt 2>&1; else DSV4_MOE_NTT=$v timeout 300 $B/test_ops_cuda > $R/ops-$v.txt 2>&1; fi
  echo "exit $?" >> $R/ops-$v.txt
  echo "ops ntt=$v: $(grep -E 'PASSED|exit' $R/ops-$v.txt | tr '\n' ' ')"; grep -E "FAIL|fail" $R/ops-$v.txt | grep -v harness | head -12
done
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?"
DSV4_MOE_NTT=4 DSV4_SRC=$PWD timeout 300 $B/test_gpu_vs_cpu > $R/gpu_vs_cpu.txt 2>&1; echo "gpu_vs_cpu (ntt 4) exit $?"
OUT=$R sh scripts/gpu_bits.sh; echo "bits exit $?"
DSV4_MOE_NTT=4 OUT=$R/b4 sh scripts/gpu_bits.sh; echo "bits (ntt 4 forced) exit $?"
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for v in new new2 base; do
    bin=$B/bench_cpu; e=DSV4_X=0; [ $v = base ] && bin=$B/bench_cpu.base; [ $v = new2 ] && e=DSV4_MOE_NTT=2
    env $e timeout 120 $bin -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/pf-$v-$i.txt 2>&1
    echo "prefill 4k $v ($i): $(grep -m1 '^model ' $R/pf-$v-$i.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')"
  done
  for v in new base; do
    bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
    for b in 1 16 64; do
      timeout 120 $bin -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b > $R/d$b-$v-$i.txt 2>&1
      echo "b$b $v ($i): $(grep -m1 '^model ' $R/d$b-$v-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
    done
  done
done
timeout 200 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 --profile $R/profile-pf4k.json --profile-steps 1 > $R/profile-pf4k.txt 2>&1
sed -n '/^prefill/,$p' $R/profile-pf4k.txt | head -16
tar czf $OUT/r.tgz -C $R .

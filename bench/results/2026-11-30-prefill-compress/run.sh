#!/bin/sh
# parallel prefill compressor: tests (default, always serial, always parallel), logits against the base
# build byte for byte, 4k prefill against the base (the serial walk), the new prefill profile
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
export DSV4_WG8_FUSE=0 # the base build's linears as at HEAD
R=/tmp/r; mkdir -p $R
for v in def 0 100000; do
  if [ $v = def ]; then timeout 300 $B/test_ops_cuda > $R/ops-$v.txt 2>&1; else DSV4_CMP_SERIAL_MAX=$v timeout 300 $B/test_ops_cuda > $R/ops-$v.txt 2>&1; fi
  echo "exit $?" >> $R/ops-$v.txt
  echo "ops serial_max=$v: $(grep -E 'PASSED|exit' $R/ops-$v.txt | tr '\n' ' ')"; grep -E "FAIL|fail" $R/ops-$v.txt | grep -v harness | head -12
done
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?"
DSV4_SRC=$PWD timeout 300 $B/test_gpu_vs_cpu > $R/gpu_vs_cpu.txt 2>&1; echo "gpu_vs_cpu exit $?"; grep -E "PASSED|FAIL" $R/gpu_vs_cpu.txt | head -5
OUT=$R sh scripts/gpu_bits.sh; echo "bits exit $?"
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for v in new base; do
    bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
    timeout 120 $bin -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/pf-$v-$i.txt 2>&1
    echo "prefill 4k $v ($i): $(grep -m1 '^model ' $R/pf-$v-$i.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')"
  done
done
timeout 200 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 --profile $R/profile-pf4k.json --profile-steps 1 > $R/profile-pf4k.txt 2>&1
sed -n '/^prefill/,$p' $R/profile-pf4k.txt | head -16
tar czf $OUT/r.tgz -C $R .

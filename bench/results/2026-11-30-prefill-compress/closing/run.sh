#!/bin/sh
# the session's closing call at its head: the GPU suite (tests, quick memcheck), 4k prefill and its
# profile, decode at batch 1 / 8 / 16 / 64
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R/verify
OUT="$R/verify" TESTS=1 SANITIZE=quick TIMINGS=0 sh scripts/gpu_suite.sh > $R/verify/suite.txt 2>&1
grep -E "^==|PASSED|FAILED|exit|ERROR SUMMARY|NOT CAUGHT" $R/verify/suite.txt | head -40
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  timeout 120 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 --json $R/prefill4k-$i.json > $R/prefill4k-$i.txt 2>&1
  echo "prefill 4k ($i): $(grep -m1 '^model ' $R/prefill4k-$i.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')"
done
for b in 1 8 16 64; do
  timeout 120 $B/bench_cpu -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b --json $R/decode-b$b.json > $R/decode-b$b.txt 2>&1
  echo "decode b$b: $(grep -m1 '^model ' $R/decode-b$b.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
done
timeout 200 $B/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 --profile $R/profile-pf4k.json --profile-steps 1 > $R/profile-pf4k.txt 2>&1
sed -n '/^prefill/,$p' $R/profile-pf4k.txt | head -16
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > $R/machine.txt
tar czf $OUT/r.tgz -C $R .

#!/bin/sh
# closing call: GPU suite (tests + quick memcheck) at the session's head; sampling with warp-aggregated
# histogram adds against the build before (.base: sampling as at 40ec4cb; DSV4_WG8_FUSE=0 = that build's
# linears as at HEAD); decode timings of the head
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R/verify
OUT="$R/verify" TESTS=1 SANITIZE=quick TIMINGS=0 sh scripts/gpu_suite.sh > $R/verify/suite.txt 2>&1
grep -E "^==|PASSED|FAILED|exit|ERROR SUMMARY|NOT CAUGHT" $R/verify/suite.txt | head -60
timeout 100 $B/test_sample_cuda > $R/sample_test.txt 2>&1; echo "test_sample_cuda exit $?"
for i in 1 2; do
  timeout 100 $B/bench_kernels --sample-only --batch 1,16,64 > $R/sample-$i.txt 2>&1
  echo "== sampling new ($i)"; grep -A14 "^sampling" $R/sample-$i.txt
  timeout 200 $B/bench_kernels.base --batch 1,16,64 --reps 20 > $R/sample-base-$i.txt 2>&1
  echo "== sampling base ($i)"; grep -A14 "^sampling" $R/sample-base-$i.txt
done
m=/tmp/flash; $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for b in 1 16; do
    for v in new base; do
      bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
      DSV4_WG8_FUSE=0 timeout 120 $bin -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b --temperature 0.7 --top-p 0.9 > $R/topp-b$b-$v-$i.txt 2>&1
      echo "top-p b$b $v ($i): $(grep -m1 '^model ' $R/topp-b$b-$v-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
    done
  done
done
for b in 1 8 16 64; do
  timeout 120 $B/bench_cpu -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b --json $R/decode-b$b.json > $R/decode-b$b.txt 2>&1
  echo "greedy b$b: $(grep -m1 '^model ' $R/decode-b$b.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > $R/machine.txt
tar czf $OUT/r.tgz -C $R .

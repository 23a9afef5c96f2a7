#!/bin/sh
# the session's closing call: the GPU suite (tests, memcheck/racecheck quick), the linear kernels, decode and
# prefill with wg8 (default) against DSV4_WG8=0 (mma.cu's F16 path) alternating, same build, same call
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
mkdir -p "$OUT/verify"
OUT="$OUT/verify" TESTS=1 SANITIZE=quick TIMINGS=0 sh scripts/gpu_suite.sh > "$OUT/verify/suite.txt" 2>&1
grep -E "^==|PASSED|FAILED|exit|ERROR SUMMARY|NOT CAUGHT" "$OUT/verify/suite.txt" | head -60
timeout 150 .gpu/bench_kernels --linear-only --json "$OUT/kernels.json" > "$OUT/kernels.txt" 2>&1
grep -E "copy|FP8|BF16" "$OUT/kernels.txt" | cut -c1-160
m=$(mktemp -d)/flash; .gpu/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2; do
  for b in 1 8 16 64; do
    for v in wg8 f16; do
      e=DSV4_WG8=1; [ $v = f16 ] && e=DSV4_WG8=0
      env $e timeout 120 .gpu/bench_cpu -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b --json "$OUT/decode-b$b-$v-$i.json" > "$OUT/decode-b$b-$v-$i.txt" 2>&1
      echo "b$b $v ($i): $(grep -m1 '^model ' "$OUT/decode-b$b-$v-$i.txt" | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
    done
  done
done
for i in 1 2; do
  for v in wg8 f16; do
    e=DSV4_WG8=1; [ $v = f16 ] && e=DSV4_WG8=0
    env $e timeout 120 .gpu/bench_cpu -m $m --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 --json "$OUT/prefill4k-$v-$i.json" > "$OUT/prefill4k-$v-$i.txt" 2>&1
    echo "prefill 4k $v ($i): $(grep -m1 '^model ' "$OUT/prefill4k-$v-$i.txt" | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')"
  done
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/machine.txt"

#!/bin/sh
# The GPU suite, run on the GPU machine in one call (see scripts/gpu_pack.sh):
# the golden tests on the CUDA backend, then timings of the CUDA and CPU
# backends on the fixtures and on Flash-shaped layers made with mkmodel.
# Results go to $OUT (default /tmp/dsv4-gpu-out).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/dsv4-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B=.gpu
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  git log --oneline -1 2>/dev/null || true
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
echo "== golden tests on the GPU"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > "$OUT/golden_cuda.txt" 2>&1
echo "exit $?" >> "$OUT/golden_cuda.txt"
grep -E "max \\|err\\||batched|reference|PASSED|FAILED|ERROR|exit" "$OUT/golden_cuda.txt"
echo "== timings"
for f in tiny_a q_stock q_nvfp4; do
  for be in cuda cpu; do
    $B/bench_cpu -m tests/fixtures/$f --prompt 256 --decode 64 --backend $be --numerics plain --json "$OUT/bench-$f-$be.json" 2>&1 | tail -1
  done
done
if [ "${FLASH_LAYERS:-0}" -gt 0 ]; then
  # Flash-shaped layers at several batch sizes, with the per-op-family profile
  $B/dsv4 mkmodel --preset flash --layers "$FLASH_LAYERS" -o /tmp/flash >/dev/null 2>&1
  $B/dsv4 inspect -m /tmp/flash > "$OUT/inspect-flash.txt"
  tail -6 "$OUT/inspect-flash.txt"
  for bs in ${FLASH_BATCHES:-1 8 16 64}; do
    timeout 240 $B/bench_cpu -m /tmp/flash --prompt 32 --decode 16 --batch "$bs" --backend cuda --numerics plain \
      --json "$OUT/bench-flash-b$bs.json" --profile "$OUT/profile-flash-b$bs.json" > "$OUT/profile-flash-b$bs.txt" 2>&1
    head -1 "$OUT/profile-flash-b$bs.txt"
  done
fi

#!/bin/sh
# k_wg8 triggering its dependents early (DSV4_WG8_PDL, default on) against at its end (=0): the tests with
# the default, then decode alternating
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
timeout 200 .gpu/test_ops_cuda > "$OUT/ops.txt" 2>&1; echo "ops exit $?"; grep -E "FAIL" "$OUT/ops.txt" | head -5
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 200 .gpu/test_golden > "$OUT/golden.txt" 2>&1; echo "golden exit $?"
DSV4_SRC=$PWD timeout 200 .gpu/test_gpu_vs_cpu > "$OUT/gpu_vs_cpu.txt" 2>&1; echo "gpu_vs_cpu exit $?"; grep -E "FAILED|PASSED" "$OUT/gpu_vs_cpu.txt" | tail -2
m=$(mktemp -d)/flash; .gpu/dsv4 mkmodel --preset flash --layers 8 --sparse -o $m > /dev/null 2>&1
for i in 1 2 3; do
  for b in 1 16; do
    [ $b = 16 ] && [ $i = 3 ] && continue
    for v in 1 0; do
      r=$(DSV4_WG8_PDL=$v timeout 100 .gpu/bench_cpu -m $m --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b --json "$OUT/b$b-pdl$v-$i.json" 2>&1 | grep -m1 '^model ' | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')
      echo "b$b pdl=$v ($i): $r"
    done
  done
done

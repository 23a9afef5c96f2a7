#!/bin/sh
# --moe-backend w4a8 (v25): verification and timings in one call (after scripts/gpu_pack.sh BASE=<main's build before it>)
set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
. scripts/gpu_env.sh
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; git log --oneline -1; } > $R/machine.txt
OUT=$R sh scripts/gpu_bits.sh; el bits
timeout 150 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt; el "ops $(tail -1 $R/ops_cuda.txt)"
DSV4_SRC=$PWD timeout 200 $B/test_gpu_vs_cpu > $R/gpu_vs_cpu.txt 2>&1; echo "exit $?" >> $R/gpu_vs_cpu.txt; el "gpu_vs_cpu $(tail -1 $R/gpu_vs_cpu.txt)"
grep -E "^gpu-vs-cpu q_mma|PASSED|FAILED" $R/gpu_vs_cpu.txt
for tool in memcheck racecheck; do
  DSV4_SRC=$PWD timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda --moe-backend w4a8 > $R/san-$tool-w4a8.txt 2>&1; echo "exit $?" >> $R/san-$tool-w4a8.txt
  el "$tool w4a8: $(grep -E 'SUMMARY' $R/san-$tool-w4a8.txt) $(tail -1 $R/san-$tool-w4a8.txt)"
done
timeout 60 $B/bench_kernels --json $R/kernels.json > $R/kernels.txt 2>&1; el kernels; grep -E "copy|^experts" $R/kernels.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for i in 1 2; do for bs in 1 16 64; do for mb in auto w4a8; do
  timeout 60 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch $bs --backend cuda --numerics reference --fill-random --moe-backend $mb --json $R/step-b$bs-$mb-$i.json > $R/step-b$bs-$mb-$i.txt 2>&1
  echo "b$bs $mb ($i): $(grep -m1 '^model ' $R/step-b$bs-$mb-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')" | tee -a $R/steps.txt
done; done; done
$B/dsv4 mkmodel --preset flash --layers 4 --sparse -o /tmp/f4 > /dev/null 2>&1
for i in 1 2; do for mb in auto w4a8; do
  timeout 100 $B/bench_cpu -m /tmp/f4 --prompt 4096 --decode 2 --batch 1 --backend cuda --numerics reference --fill-random --moe-backend $mb --json $R/prefill-$mb-$i.json > $R/prefill-$mb-$i.txt 2>&1
  echo "prefill 4096 x 4 layers $mb ($i): $(grep -m1 '^model ' $R/prefill-$mb-$i.txt | sed 's/.*prefill 4096 tokens each: //; s/decode.*//')" | tee -a $R/prefill.txt
done; done
el done
tar czf $OUT/r.tgz -C /tmp r

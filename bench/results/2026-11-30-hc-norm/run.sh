#!/bin/sh
# hc_pre + RMSNorm fused (k_hc_split's block 0): bits against c9f7ff8's build, the GPU tests that cover it, A/B timing
set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
. scripts/gpu_env.sh
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; git log --oneline -1; } > $R/machine.txt
OUT=$R sh scripts/gpu_bits.sh; el bits
timeout 100 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt; el "ops $(tail -1 $R/ops_cuda.txt)"; grep -E "then rmsnorm|FAIL" $R/ops_cuda.txt | cut -c1-150
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 100 $B/test_golden > $R/golden_cuda.txt 2>&1; echo "exit $?" >> $R/golden_cuda.txt; el "golden $(tail -1 $R/golden_cuda.txt)"
DSV4_SRC=$PWD timeout 100 $B/test_gpu_vs_cpu > $R/gpu_vs_cpu.txt 2>&1; echo "exit $?" >> $R/gpu_vs_cpu.txt; el "gpu_vs_cpu $(tail -1 $R/gpu_vs_cpu.txt)"
DSV4_SRC=$PWD timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda > $R/memcheck.txt 2>&1; echo "exit $?" >> $R/memcheck.txt; el "memcheck $(grep SUMMARY $R/memcheck.txt) $(tail -1 $R/memcheck.txt)"
OUT=$R AB_REPEAT=2 timeout 150 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"; el ab
tar czf $OUT/r.tgz -C /tmp r

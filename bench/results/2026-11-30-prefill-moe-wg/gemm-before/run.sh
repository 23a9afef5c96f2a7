#!/bin/sh
# prefill GEMMs: wg8 at 256..4096 tokens, and ncu on k_wg8 launches at 1024 tokens
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv > $R/machine.txt 2>&1
timeout 240 $B/bench_kernels --linear-only --batch 256,1024,4096 --reps 10 --json $R/gemm.json > $R/gemm.txt 2>&1
grep -E "TFLOP" $R/gemm.txt | cut -c1-200
# ncu: three launches of k_wg8 in reference numerics at 1024 tokens (wq_b's and wo_b's)
timeout 200 ncu -k regex:'k_wg8<' --launch-skip 30 --launch-count 2 --set detailed $B/bench_kernels --linear-only --batch 1024 --reps 2 > $R/ncu-wg8.txt 2>&1
grep -E "k_wg8|Duration|Compute \(SM\) Th|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per|Theoretical Occ|Block Size|Grid Size|Issue Slots|Executed Ipc|Dynamic Shared|L1/TEX Hit|L2 Hit|DRAM Throughput|Waves Per" $R/ncu-wg8.txt | head -60
timeout 120 ncu -k regex:'k_wg8<' --launch-skip 30 --launch-count 2 --section WarpStateStats --section InstructionStats --section SchedulerStats $B/bench_kernels --linear-only --batch 1024 --reps 2 > $R/ncu-stall.txt 2>&1
grep -E "Stall|stall|Warp Cycles|Eligible|Active Warps|No Eligible|One or More" $R/ncu-stall.txt | head -40
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

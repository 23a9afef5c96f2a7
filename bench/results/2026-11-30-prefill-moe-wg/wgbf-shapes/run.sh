#!/bin/sh
# k_wgbf per shape against k_mma_bf16 (DSV4_WGBF=0), same binary; ncu of one k_wgbf launch
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
for v in 1 0 x; do
  DSV4_WGBF=$v timeout 200 $B/bench_kernels --linear-only --batch 256,1024,4096 --reps 10 > $R/gemm-wgbf$v.txt 2>&1
  grep -E "BF16" $R/gemm-wgbf$v.txt | grep -v "lm head" | cut -c1-62 | sed "s/^/wgbf=$v /"
done
timeout 120 ncu -k regex:'k_wgbf$' --launch-skip 20 --launch-count 1 --set detailed --section WarpStateStats --section SchedulerStats $B/bench_kernels --linear-only --batch 4096 --reps 2 > $R/ncu-wgbf.txt 2>&1
grep -E "k_wgbf|Duration|Compute \(SM\) Th|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per|Grid Size|Issue Slots|L2 Hit|DRAM Throughput|No Eligible|Active Warps Per|Warp Cycles Per Issued" $R/ncu-wgbf.txt | head -30
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

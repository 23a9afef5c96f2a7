#!/bin/sh
# (prepared in s30, NOT run: the device time ran out) Where k_moe16's decode warps wait at 1 token (main, e42312a's code): ncu's warp-state and scheduler sections of
# k_moe16's 5th and 6th launches of bench_kernels --experts-only --batch 1 (a gate / up and a down after warm-up;
# which numerics' kernel they are shows in the names' template arguments: NP 1 = reference, the row to read). Same .gpu as
# closing/ (BASE is not used); carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin stalls
timeout 150 ncu --clock-control none -k regex:k_moe16 --launch-skip 4 --launch-count 2 \
  --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section SpeedOfLight \
  $B/bench_kernels --experts-only --batch 1 > $R/ncu-moe16-b1.txt 2>&1
echo "ncu rc=$?"
grep -E "k_moe16|Duration|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Achieved Occupancy|Memory Throughput|DRAM Throughput|Stall" $R/ncu-moe16-b1.txt | head -60
call_end

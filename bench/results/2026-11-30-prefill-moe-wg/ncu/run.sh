#!/bin/sh
# ncu on k_moe_wg (gate/up and down) in a 4k prefill
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 >/dev/null 2>&1
for w in 2 1; do
DSV4_MOE_WGS=$w timeout 240 ncu -k regex:'k_moe_wg' --launch-count 2 --set detailed --section WarpStateStats --section InstructionStats --section SchedulerStats $B/bench_cpu -m /tmp/f2 --prompt 4096 --decode 1 --backend cuda --numerics reference --fill-random > $R/ncu-moewg-wgs$w.txt 2>&1
grep -E "k_moe_wg|Duration|Compute \(SM\) Th|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per|Block Size|Grid Size|Issue Slots|Executed Ipc A|L1/TEX Hit|L2 Hit|DRAM Throughput|Stall|Warp Cycles Per Issued|No Eligible|Active Warps Per" $R/ncu-moewg-wgs$w.txt | head -60
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 4: why batch 1's dense linears sit at 2-3x their bytes' time (wo_a on k_mma_fp8s: 22.7 us under ncu
# against 7.6; wq_b / wo_b on k_wg8 ~13.5 against ~8): ncu's sections on those kernels in decode steps at
# batch 1 (no graphs), 025ca55 (the bundle's bench_cpu.base)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 1 --decode 3 --batch 1 --no-graphs"
timeout 240 ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats \
  -k regex:'^(k_mma_fp8s|k_wg8)$' --launch-skip 60 --launch-count 10 $B/bench_cpu.base $BC > $R/ncu-lin.txt 2>&1
echo "ncu rc=$?"
grep -E "^  k_|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Waves Per SM|Grid Size|Block Size|Issue Slots Busy|Eligible Warps|Active Warps Per|No Eligible|Block Limit|Executed Ipc|Dynamic Shared|L2 Hit|Stall" $R/ncu-lin.txt | head -150
gzip -f $R/ncu-lin.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

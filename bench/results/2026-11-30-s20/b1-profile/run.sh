#!/bin/sh
# call 2: where batch 1's step goes (7be40f8): ncu's per-kernel table of a batch-1 step (each kernel alone,
# --no-graphs), the routed experts' two k_moe16 launches at batch 1 in reference numerics under ncu's sections
# (bench_kernels --experts-only: launches 9-12 are reference numerics' warm-up and first call), and, where the
# machine has nsys, a timeline of batch 1's graph replays (node by node) to see the critical path's gaps
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
timeout 40 $B/bench_cpu $BC --prompt 16 --decode 32 --batch 1 > $R/b1.txt 2>&1; grep -m1 '^model' $R/b1.txt
timeout 60 $B/bench_kernels --experts-only --batch 1,16 > $R/bk.txt 2>&1; grep "experts" $R/bk.txt
timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $B/bench_cpu $BC --prompt 1 --decode 2 --batch 1 --no-graphs > $R/ncu1.txt 2>&1
python3 bench/ncu_kernel_table.py --steps 3 $R/ncu1.txt > $R/ncu1-table.txt 2>&1; head -45 $R/ncu1-table.txt
timeout 120 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis --section SchedulerStats \
  -k regex:k_moe16 --launch-skip 8 --launch-count 4 $B/bench_kernels --experts-only --batch 1 --reps 3 > $R/ncu-moe1.txt 2>&1
grep -E "k_moe16|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Waves Per SM|Grid Size|Issue Slots Busy|Eligible Warps|Active Warps Per|No Eligible|Block Limit" $R/ncu-moe1.txt | head -80
if command -v nsys >/dev/null; then
  timeout 120 nsys profile --cuda-graph-trace=node -o $R/b1-nsys -f true $B/bench_cpu $BC --prompt 16 --decode 8 --batch 1 > $R/nsys.txt 2>&1
  timeout 100 nsys stats -r cuda_gpu_trace -f csv -o $R/b1-trace $R/b1-nsys.nsys-rep >> $R/nsys.txt 2>&1
  ls -la $R; rm -f $R/b1-nsys.nsys-rep $R/b1-nsys.sqlite; gzip -f $R/b1-trace*.csv
else echo "no nsys"; fi
gzip -f $R/ncu1.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

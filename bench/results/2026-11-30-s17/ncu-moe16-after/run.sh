#!/bin/sh
# call 7: what bounds k_moe16 at batch 16 after 5c5f4ff (four blocks an SM, scales a group ahead): pipes, stalls,
# decode step on 8 Flash layers, reference numerics
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
M="regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,regex:sm__pipe_.*_cycles_active.avg.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
for b in 16; do
timeout 200 ncu --clock-control none -k regex:k_moe16 --launch-skip 16 --launch-count 2 --metrics "$M" $B/bench_cpu $BC --prompt 1 --decode 2 --batch $b --no-graphs > $R/ncu-b$b.txt 2>&1
grep -E "k_moe16|pct|ratio|per_cycle|duration|inst_executed.sum" $R/ncu-b$b.txt | awk '$NF+0 > 0.05 || /k_moe16/' | head -120
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

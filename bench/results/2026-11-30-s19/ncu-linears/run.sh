#!/bin/sh
# call 8: what bounds wo_a (k_mma_fp8 F16 hi + lo path, 8 groups of 1,024 x 4,096 FP8 in one launch), the FP8
# linears on wgmma (k_wg8: wq_a + wkv, wq_b + idx wq_b, wo_b, the shared expert) and the attention chain at
# batch 16: ncu metrics (time, DRAM, SM activity, waves, occupancy limits, issue, stall reasons) on 76cf0b2,
# decode step of 2 Flash layers (the same shapes; 8 left ncu too little device memory for kernel replay, first
# try in this directory's ncu-b16-first.txt), reference numerics, no graphs (ncu times each launch alone)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 >/dev/null 2>&1
BC="-m /tmp/f2 --backend cuda --fill-random --numerics reference"
M="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_dim_z,launch__waves_per_multiprocessor,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_blocks,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"
K='regex:^(k_mma_fp8|k_wg8|k_attn_qk|k_attn_pv|k_attn_md16|k_attn_qpack)$'
timeout 400 ncu --clock-control none -k "$K" --launch-skip 14 --launch-count 24 --metrics "$M" $B/bench_cpu $BC --prompt 1 --decode 2 --batch 16 --no-graphs > $R/ncu-b16.txt 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_]+.*\(|duration|dram__|sm__cycles|smsp__cycles|waves|occupancy_limit|registers_per|grid_size|cluster|warps_active|eligible|issue_active|hit_rate|local_op" $R/ncu-b16.txt | sed 's/(const .*)//' | head -400 | cut -c1-150
gzip -f $R/ncu-b16.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

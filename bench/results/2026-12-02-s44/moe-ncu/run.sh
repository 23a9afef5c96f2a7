#!/bin/sh
# Prepared in s44 (NOT run: the device time ran out). What bounds k_moe_wg (the routed experts at prefill, 65 ms
# of the 121 ms cuBLASLt prefill)? v64 ruled out the E2M1 decode (k_moe_wga: decoded once a block, slower) and the
# warpgroup's own wgmma wait (units two in flight: even). This call: ncu on one gate / up and one down launch of a
# 4,096-token prefill on 2 Flash layers - speed of light, memory workload (L2 and shared-memory throughput: the F16
# activations are 512 KB a 64-pair tile, re-read by every 64-row block, ~31 GB a layer), warp states with every
# stall reason (raw page), scheduler stats. Pack: NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin moe-ncu
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
timeout 400 ncu -k regex:k_moe_wg --launch-count 2 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section Occupancy --print-details all \
  --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum \
  $B/bench_cpu -m /tmp/f2 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 1 \
  > "$R/ncu-moewg.txt" 2>&1
echo "ncu exit $?"
grep -E "k_moe_wg|Duration|Throughput|Issue Slots|Eligible|stalled_[a-z_]+_per_issue_active.ratio +[0-9.]+ *$" "$R/ncu-moewg.txt" | head -70
call_end

#!/bin/sh
# s59 gap/: where the real gate / up pass at one token spends the time that stream_probe's `mma` mode (the same
# grid, rows, ring, decode and MMAs: ~17 us net of the events for 53.5 MB, s58 next/) does not. ncu at the
# GPU's own clocks (--clock-control none) with its cache flush between kernels, on every kernel of one experts
# call (bench_kernels --experts-only --batch 1: plan, x pack, gate / up, M pack, down) and on the probe's mma
# kernel (128 row blocks, 4 an SM): duration, instructions, issue activity, DRAM bytes, warps per SM.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin gap
M=gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,sm__warps_active.avg.per_cycle_active,smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio
timeout 200 ncu --clock-control none --metrics "$M" --kernel-name-base demangled -k "regex:k_moe" --launch-skip 65 --launch-count 10 \
  $B/bench_kernels --experts-only --batch 1 --reps 8 > "$R/ncu-experts.txt" 2>&1
echo "== ncu experts exit $?"
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude bench/stream_probe.cu -o /tmp/stream_probe
timeout 200 ncu --clock-control none --metrics "$M" --kernel-name-base demangled -k 'regex:k_probe<.int.3, .bool.0, .int.[12]>' \
  --launch-skip 2 --launch-count 8 /tmp/stream_probe 3 > "$R/ncu-probe.txt" 2>&1
echo "== ncu probe exit $?"
grep -E "^  [a-z_]|k_|duration|inst_executed|issue_active|dram__bytes|warps_active|cycles_active|per_second|stalled" "$R/ncu-experts.txt" | head -120
grep -E "k_probe|duration|inst_executed|issue_active|dram__bytes|warps_active|cycles_active|stalled" "$R/ncu-probe.txt" | head -40
call_end

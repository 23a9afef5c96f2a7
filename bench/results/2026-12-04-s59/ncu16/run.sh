#!/bin/sh
# s59 ncu16/: where pp2/'s attention chain at 16 and 64 tokens is slower than 9dc41f3's (CSA 4k: 32.3 against
# 30.0 us at 16, 67.2 against 62.2 at 64): ncu at the GPU's own clocks (no cache flush: the chain's kernels
# read what the one before wrote) on bench_kernels --attn-only's first case (CSA, 4k), the attention kernels
# of two calls, new and base, at 16 and 64 tokens.
# Pack: BASE=/tmp/baseH KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ncu16
M=gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,sm__warps_active.avg.per_cycle_active,smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second
for b in 16 64; do
  for v in new base; do
    bin=$B/bench_kernels; [ $v = base ] && bin=$B/bench_kernels.base
    timeout 150 ncu --clock-control none --cache-control none --metrics "$M" --kernel-name-base demangled \
      -k 'regex:k_attn' --launch-skip 8 --launch-count 8 $bin --attn-only --batch $b --reps 4 > "$R/ncu-$v-b$b.txt" 2>&1
    echo "== $v b$b exit $?"
    grep -E "^  [a-z_ ]*k_attn|duration" "$R/ncu-$v-b$b.txt" | sed 's/(attn_args.*//' | paste - - | awk '{print $1, $2, $NF}' | head -10
  done
done
call_end

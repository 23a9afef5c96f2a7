#!/bin/sh
# OUTCOME: no gain, and the in-call A/B was void: cuda_env_int (common.cuh) returns the default for 0, so
# DSV4_ATTN_ONE_LATE=0 ran the late stores too (both columns are the change). Against aftrace/'s trace of the kernel
# as landed (another machine): the weights phase 2,259-2,498 cycles against 1,885-2,195, the whole 17,787-17,827
# against 17,413-17,517. Not landed; the change was 20 lines in k_attn_one's weights loop.
# s60 late/: k_attn_one stores each head's part max and sum at the head's owner after the __syncthreads that ends
# the weights phase (lane 0 of each warp, from registers: in flight during the weighted sum) instead of before it.
# aftrace/ had that phase at ~2,000 cycles for HCA's one head of ~20 rows a warp as for CSA's two of 80: as if the
# sync waited for the remote stores. DSV4_ATTN_ONE_LATE=0 is the old order in the same binary; the bits are the same
# by construction (the owner reads the values after the cluster barrier either way). The trace (an AF_TRACE build
# as the base) with each, then attention alone at 1 token, 3 rounds, and decode at batch 1, 2 rounds.
# Pack: cmake --build build-trace --target bench_kernels (-DAF_TRACE, as aftrace/'s);
#       BASE=build-trace KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin late
for v in 1 0; do
  DSV4_ATTN_ONE_LATE=$v timeout 200 $B/bench_kernels.base --attn-only --batch 1 --reps 8 > "$R/trace-$v.txt" 2>&1
  echo "== trace DSV4_ATTN_ONE_LATE=$v (exit $?)"
  python3 bench/af_trace.py "$R/trace-$v.txt" > "$R/phases-$v.txt" 2>&1; head -16 "$R/phases-$v.txt"
  gzip -9 -n "$R/trace-$v.txt"
done
call_kernels attn 3 "late=$B/bench_kernels;early=env DSV4_ATTN_ONE_LATE=0 $B/bench_kernels" "--attn-only --batch 1"
for f in "$R"/attn-*.txt; do echo "$f $(grep -E '^(CSA|HCA)' "$f" | awk '{printf "%s%s %s ", $1, $2, $6}')"; done
call_ab 2 "late=$B/bench_cpu --overlap;early=env DSV4_ATTN_ONE_LATE=0 $B/bench_cpu --overlap" "b1:--batch 1"
call_end

#!/bin/sh
# s61 pvw2/ (PREPARED, NOT run: the device was not lent again after icache/): run it on branch wip/pvw-wg (on main at
# the s61 records). next/'s ncu had k_attn_pvw<1, 64, 6> at 16 tokens as one warpgroup an SM (6.25 % occupancy),
# 14.9-15.1 us for ~160 KB into each SM (~5 bytes a cycle: latency, not bandwidth), its top stalls the waits for its
# wgmma at each part's end. k_attn_pvw<1, 64, 4, 2> (DSV4_ATTN_PVW2=1, tune's wg64) walks parts 0-3 and 4-7 with
# two warpgroups, each its own ring and named barrier; warpgroup 1 keeps its four parts' sums apart (206 registers)
# and hands them over through shared memory, where warpgroup 0 adds all eight in part order - the same operations in
# the same order. The one-warpgroup kernels' SASS changed too (the same code with NW = 1), so they are timed against
# main's build. Claimed: the same bits. First the bits: the suite with it on (test_ops_cuda's tuned choices put wg64
# beside the others bit for bit; the logits against main's dsv4 byte for byte) and a memcheck; then the chain at
# 16 / 32 / 64 tokens - new with it, new without it, main - and decode at 16 / 32.
# Pack (on the branch): BASE=<a build-gpu of main, copied aside first> NOTOK=1 sh scripts/gpu_pack.sh  (move older records
# aside: the tree that travels is limited to 64 MiB)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pvw2
call_verify DSV4_ATTN_PVW2=1
export DSV4_ATTN_PVW2=1 # (an assignment before a shell function's name does not reach its commands everywhere)
call_memcheck k_attn_pvw "--attn-only --batch 16 --reps 1"
for b in 16 32; do call_ncu_metrics b$b 'k_attn_pvw' "--attn-only --batch $b --reps 4"; done
unset DSV4_ATTN_PVW2
call_kernels attn 2 "two=env DSV4_ATTN_PVW2=1 $B/bench_kernels;one=$B/bench_kernels;main=$B/bench_kernels.base" \
  "--attn-only --batch 16,32,64"
call_attn_ab two one main
call_snap
call_ab 2 "two=env DSV4_ATTN_PVW2=1 $B/bench_cpu --overlap;main=$B/bench_cpu.base --overlap" "b16:--batch 16" \
  "b32:--batch 32"
call_end

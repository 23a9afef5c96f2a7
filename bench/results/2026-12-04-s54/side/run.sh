#!/bin/sh
# s54 side/: the shared expert's k_wg8 rings beside the routed experts at batch 1. Its gate / up launch (256
# blocks, two an SM) sizes a ~100 KB ring a block from the 200 KB budget (more stages than its 8 groups), which
# leaves no room for k_moe16's 51 KB blocks on those SMs until it ends; its down (128 blocks) ~112 KB. Knobs of
# the same binary (wg8.cu): DSV4_WG8_SIDE_KB, the budget of launches on the second queue; DSV4_WG8_SCLAMP=1, at
# most a block's groups + 1 stages; DSV4_WG8_SMEM_KB, every launch's budget. Decode, three rounds alternating;
# node traces at batch 1.
# Pack: NOTOK=1 LEAN=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin side
call_ab 3 "base=$B/bench_cpu --overlap;s64=env DSV4_WG8_SIDE_KB=64 $B/bench_cpu --overlap;s32=env DSV4_WG8_SIDE_KB=32 $B/bench_cpu --overlap;clamp=env DSV4_WG8_SCLAMP=1 $B/bench_cpu --overlap;all64=env DSV4_WG8_SMEM_KB=64 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b16:--batch 16"
(export DSV4_WG8_SIDE_KB=32; call_trace s32-b1 "--batch 1")
call_trace base-b1 "--batch 1"
call_end

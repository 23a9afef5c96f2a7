#!/bin/sh
# s75 wot/: why wo_a's k_mma_fp8s starts only when k_attn_one ends (s74's kt-b1 trace: median -0.2 us over 504
# layers, where every k_wg8 starts 0.8 us after its pack). Node traces (scripts/gpu_ktrace.sh) of the 64-step decode
# at batch 1: the tree; DSV4_MMA_GPW=32 (k_mma_fp8s on 512 one-warp blocks instead of 1,024: if its blocks wait for
# room beside the attention's, half the grid fits on the SMs the attention leaves free); DSV4_MMA_STREAM=0 (wo_a on
# k_mma_fp8, four warps a block). Then decode at batch 1, the tree against DSV4_MMA_GPW=32, two rounds.
# Pack: AS=wot KTRACE=1 LEAN=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh wot=bench/results/2026-12-06-s75/wot/run.sh (~2.5 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wot
call_trace b1 "--batch 1"
export DSV4_MMA_GPW=32
call_trace g32-b1 "--batch 1"
unset DSV4_MMA_GPW
export DSV4_MMA_STREAM=0
call_trace s0-b1 "--batch 1"
unset DSV4_MMA_STREAM
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;g32=env DSV4_MMA_GPW=32 $B/bench_cpu --overlap" "b1:--batch 1"
sort "$R/ab.txt" | uniq
call_end

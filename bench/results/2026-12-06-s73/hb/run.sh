#!/bin/sh
# s73 hb/ (one H100 or H200; main at the bundle's commit; *.base: a probe build of the same tree with
# -DAF_PROBE_HALF, k_attn_one copying only the first half of each cached row - wrong values, timing only).
# Two questions about CSA's one-token attention (10.3-10.5 us on H100s; s60's trace: the rows' copy ~4,700 of
# ~17,400 cycles after the wait, at ~15 bytes a cycle an SM once ~20 KB are in flight):
# - is the copy bound by each SM's intake (then half the bytes a block halves it) or by the grid's total (then
#   the 64 one8 blocks' 5.1 MB are the cost, and 16 heads a block - 32 blocks, 2.6 MB - copies faster)?
#   DSV4_ATTN_ONE8_ROWS=0 takes 16 heads a block everywhere (the same bits: a head's sums do not depend on how
#   many share a block); since s70 the blocks have 16 warps, and one (16 heads) with 16 warps was never timed.
# - the same in decode steps (rows from HBM, not L2): batch 1-2 at 4k and 128k contexts.
# Pack: AS=hb BASE=build-probe LEAN=1 sh scripts/gpu_pack.sh (build-probe: cmake -DCMAKE_CUDA_FLAGS=-DAF_PROBE_HALF)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin hb
H16="env DSV4_ATTN_ONE8_ROWS=0"
call_kernels attn 2 "def=$B/bench_kernels;hb16=$H16 $B/bench_kernels;half=$B/bench_kernels.base;half16=$H16 $B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab hb16 half half16 def
call_snap
call_ab 2 "def=$B/bench_cpu --overlap;hb16=$H16 $B/bench_cpu --overlap" \
  "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072" "b2x4k:--batch 2 --context 4096"
sort "$R/ab.txt" | uniq
call_end

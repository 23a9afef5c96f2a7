#!/bin/sh
# s69 w16/ (one H100 or H200; main at the bundle's commit, the base build 1f5e2a9 as *.base): two bit-neutral
# variants of k_attn_one, each behind a switch, against the default (the same binary) and the base.
# - 16 warps a block (DSV4_ATTN_ONE_WARPS=16; k_attn_one<HB, 16>): the same sums in the same order over twice the
#   warps: a warp a score tile (8 took up to two), a head's max, sum and weights (8 took two heads each), 4 of the
#   weighted sum's 8-dimension tiles (8 took 8), the join's pairs over 512 threads. s61 / s63's trace: weights ~2,100
#   cycles, weighted sum ~1,300, join ~3,800 after the copies - the phases more warps can split.
# - the score tiles paired as (i, i + half) (DSV4_ATTN_ONE_SP=1; k_attn_one<HB, NW, true>): with 8 warps and CSA's 10
#   tiles, warps 2-7 loaded q's fragments for one tile and that tile's rows twice (the pair's second a copy of the
#   first); paired, 5 warps take two tiles each: ~20 of the 32 16-byte shared loads a step. The scores phase
#   (~2,900 cycles) reads ~256 KB of shared memory at 128 bytes a cycle - if that is its bound, ~-700 cycles.
# Trimmed to the device time left late in s69: the attention alone at 1-3 tokens, 4k and 128k (two rounds), and
# decode at batch 1 x 4k with both switches against neither (two rounds) first, then the checks with both on:
# test_ops_cuda (every attention layout bit for bit), the logits against the base build byte for byte.
# Pack: AS=w16 BASE=<1f5e2a9's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin w16
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
W="env DSV4_ATTN_ONE_WARPS=16" S="env DSV4_ATTN_ONE_SP=1" WS="env DSV4_ATTN_ONE_WARPS=16 DSV4_ATTN_ONE_SP=1"
call_kernels attn 2 "w16=$W $B/bench_kernels;sp8=$S $B/bench_kernels;sp16=$WS $B/bench_kernels;w8=$B/bench_kernels" \
  "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab w16 sp8 sp16 w8
call_snap
call_ab 2 "sp16=$WS $B/bench_cpu --overlap;w8=$B/bench_cpu --overlap" \
  "b1x4k:--batch 1 --context 4096"
sort "$R/ab.txt" | uniq
call_snap
export DSV4_ATTN_ONE_WARPS=16 DSV4_ATTN_ONE_SP=1
call_ops "attn|one"
call_bits
unset DSV4_ATTN_ONE_WARPS DSV4_ATTN_ONE_SP
call_end

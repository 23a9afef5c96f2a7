#!/bin/sh
# (prepared in s34 on wip/one-halves, NOT run) k_attn_half (DSV4_ATTN_ONE_HALVES=1): k_attn_one over half the
# dimensions a block, a 16-block cluster a (token, 16 heads), the scores' chain handed from the first half's
# block to the second's (KERNEL_NOTES, state after v54). First the bits: test_ops_cuda with it on (its
# tuned-choice loop compares `one` with the four kernels bit for bit; a hang in the hand-offs ends at the
# timeout) and off; then the attention at batch 1-2, halves / one alternating, 3 rounds. ~2 minutes.
# sh scripts/gpu_pack.sh; carry .gpu. If it wins: the suite (gpu_verify.sh) and decode at batch 1 before landing.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin halves
KAB_OPS_TIMEOUT=120 KAB_OPS="halves=DSV4_ATTN_ONE_HALVES=1;one=" \
  KAB_BINS="halves=env DSV4_ATTN_ONE_HALVES=1 $B/bench_kernels;one=$B/bench_kernels" sh scripts/gpu_kab.sh
call_end

#!/bin/sh
# s61 ow/ (PREPARED, NOT run - a draft: run it after mrg/ and mrg2/): branch wip/one-wg (on wip/s61-merge).
# k_attn_ow, the one-pass attention at 3+ tokens on wgmma behind DSV4_ATTN_OW=1, in place of k_attn_qk, k_attn_md16
# and the weighted sum after k_attn_qpack wherever a part's rows fit (RP <= 96: CSA at any context, HCA to ~66k): a
# cluster of the 8 parts a token, all 64 heads a block, 256 threads, ~200 KB at CSA's 96-row parts - k_attn_qkw's
# scores (two row tiles), k_attn_one's weights (a warp 8 heads) and owners' join (8 heads a part), k_attn_pvw's
# weighted sum (a warpgroup 256 dimensions). KERNEL_NOTES' byte count puts it at ~12-14 us at 16 tokens (the chain
# 30.6). Claimed: the same bits. First the bits: the suite with it on (test_ops_cuda runs it for every tuned choice
# past the one-token path and compares it bit for bit with the chain - the parts layout keeps the chain - and with
# k_attn_one's choices; the logits against main's dsv4) and its memcheck; then the attention at 3 / 8 / 16 / 32 / 64
# tokens with it, without it and main, and decode at 8 / 16 / 32 with it.
# Pack (on the branch): BASE=<a build-gpu of main, copied aside first> NOTOK=1 sh scripts/gpu_pack.sh  (move older records
# aside: the tree that travels is limited to 64 MiB)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ow
call_verify DSV4_ATTN_OW=1
export DSV4_ATTN_OW=1 # (an assignment before a shell function's name does not reach it everywhere)
call_memcheck k_attn_ow "--attn-only --batch 16 --reps 1"
call_ncu_metrics b16 'k_attn_(ow|qpack)' "--attn-only --batch 16 --reps 4"
unset DSV4_ATTN_OW
call_snap
call_kernels attn 2 "ow=env DSV4_ATTN_OW=1 $B/bench_kernels;off=$B/bench_kernels;main=$B/bench_kernels.base" \
  "--attn-only --batch 3,8,16,32,64"
call_attn_ab ow off main
call_end
# (s62: the decode A/B went to ow2/run.sh, a call of its own: s62's review put this one near the 600 s limit with it)

#!/bin/sh
# s61 mrg2/ (PREPARED, NOT run): after mrg/'s bits, the timings of the three prepared changes on branch
# wip/s61-merge, each alone and together, against main's build in the same call: the attention alone at 1 / 2 / 16 /
# 32 / 64 tokens (3 rounds alternating; "off" is the merge with every switch off: k_attn_one's change alone; "rot"
# asks rot/'s question again - DSV4_ATTN_ROT=1, the merge branch's only, each block's copies of bytes other blocks
# copy at once from its own offset - against "off"), then decode with QKW and PVW2 on against main at batch 1,
# 1 x 4k, 16, 32 and 64 (2 rounds).
# Pack: mrg/'s (the same bundle; the trace binary unused here).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mrg2
call_kernels attn 2 "all=env DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1 $B/bench_kernels;qkw=env DSV4_ATTN_QKW=1 \
$B/bench_kernels;pvw2=env DSV4_ATTN_PVW2=1 $B/bench_kernels;rot=env DSV4_ATTN_ROT=1 $B/bench_kernels;\
off=$B/bench_kernels;main=$B/bench_kernels.base" "--attn-only --batch 1,2,16,32,64"
call_attn_ab all qkw pvw2 rot off main
python3 bench/attn_ab.py "$R" rot off > "$R/attn-ab-rot.txt" 2>&1; cat "$R/attn-ab-rot.txt" # rot/'s question
call_end
# (s62: 2 rounds, not 3, and the decode A/B in mrg3/run.sh, a call of its own: s62's review put 18 attention tables
# and 20 decode runs past the 600 s limit)

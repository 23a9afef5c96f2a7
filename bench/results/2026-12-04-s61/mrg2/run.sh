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
call_kernels attn 3 "all=env DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1 $B/bench_kernels;qkw=env DSV4_ATTN_QKW=1 \
$B/bench_kernels;pvw2=env DSV4_ATTN_PVW2=1 $B/bench_kernels;rot=env DSV4_ATTN_ROT=1 $B/bench_kernels;\
off=$B/bench_kernels;main=$B/bench_kernels.base" "--attn-only --batch 1,2,16,32,64"
call_attn_ab all qkw pvw2 rot off main
python3 bench/attn_ab.py "$R" rot off > "$R/attn-ab-rot.txt" 2>&1; cat "$R/attn-ab-rot.txt" # rot/'s question
call_snap
call_ab 2 "all=env DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1 $B/bench_cpu --overlap;main=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b1x4k:--batch 1 --context 4096" "b16:--batch 16" "b32:--batch 32" "b64:--batch 64"
call_end

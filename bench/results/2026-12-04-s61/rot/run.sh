#!/bin/sh
# s61 rot/: do blocks that copy the same rows at the same moment slow each other? At one token k_attn_one's 8 head
# groups of a part copy the same 80 rows at once (s60 aftrace/: issuing them takes ~4,670 cycles, ~17.5 bytes a cycle
# into an SM, and their wait after is ~50: the issue is the bound); at 16-64 tokens the 10 score blocks of a token
# copy its q at once (k_attn_qk) and the 8 slices of a token read the same weight fragments (k_attn_pvw).
# DSV4_ATTN_ROT=1 starts each block's copies at its own offset (the same bytes to the same places: the same bits).
# The AF_TRACE build (bench_kernels.base) with and without it, then the attention tables alternating.
# Pack, here:
#   cmake --build build-trace --target bench_kernels   (build-trace: -DCMAKE_CUDA_FLAGS=-DAF_TRACE, s60 aftrace/)
#   BASE=build-trace KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rot
for v in plain rot; do
  if [ $v = rot ]; then e="env DSV4_ATTN_ROT=1"; else e=""; fi
  timeout 200 $e $B/bench_kernels.base --attn-only --batch 1 --reps 8 > "$R/trace-$v.txt" 2>&1
  echo "== trace $v exit $?"
  python3 bench/af_trace.py "$R/trace-$v.txt" | head -16
  gzip -9 -n "$R/trace-$v.txt"
done
call_kernels attn 3 "rot=env DSV4_ATTN_ROT=1 $B/bench_kernels;plain=$B/bench_kernels" "--attn-only --batch 1,16,64"
call_attn_ab rot plain
call_end

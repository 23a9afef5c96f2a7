#!/bin/sh
# s59 ppt/: the per-part attention numerics (pp/) timed against 9dc41f3's build (the same kernels elsewhere):
# the attention kernels alone at 1 / 16 / 64 tokens (bench_kernels --attn-only; new then base, two rounds),
# then decode on 8 Flash-shaped layers at batch 1 / 16 / 64 and at batch 16 with a 32k context (two rounds).
# Pack: BASE=/tmp/baseH KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ppt
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
for f in "$R"/attn-*.txt; do echo "$f"; grep -E "^(CSA|HCA)" "$f"; done
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b16c32k:--batch 16 --context 32768"
call_end

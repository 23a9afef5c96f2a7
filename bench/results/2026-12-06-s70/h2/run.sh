#!/bin/sh
# s70 h2/ (asked of an H200, run on an H100 - the kind lends either; main at the bundle's commit, the base build 1f5e2a9 as *.base): k_attn_one's new defaults
# against the base on the issue's GPU - the attention alone at 1-3 tokens, 4k and 128k, two rounds.
# Pack: AS=h200a BASE=<1f5e2a9's build-gpu> sh scripts/gpu_pack.sh (the h200a/ bundle with the base riding along)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin h2
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab new base
call_end

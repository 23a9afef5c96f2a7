#!/bin/sh
# s70 def/ (one H100 or H200; main at the bundle's commit, the base build 1f5e2a9 as *.base): k_attn_one's new
# defaults from one/ - the score tiles paired (SP) always, 16 warps a block from 2 tokens or where a part may hold
# 96 rows, 8 below - checked (test_ops_cuda: every attention layout bit for bit against the CPU; the logits against
# the base byte for byte; memcheck at 1 and 2 tokens) and timed against the base (the attention alone at 1-3 tokens,
# 4k / 128k, two rounds).
# Pack: AS=def BASE=<1f5e2a9's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin def
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_ops "attn|one"
call_bits
call_memcheck k_attn_one "--attn-only --batch 1,2 --contexts 4096,131072 --reps 1"
call_snap
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab new base
call_end

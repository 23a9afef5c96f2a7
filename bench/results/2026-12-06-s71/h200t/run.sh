#!/bin/sh
# s71 h200t/ (an H200; main at the bundle's commit c34e4e77, the base build 1f5e2a9 as *.base): (1) k_attn_one's new
# defaults (s70, fa70e0dd) against the base on the issue's GPU - the attention alone at 1-3 tokens, 4k and 128k, two
# rounds (s70's h2/ ran this on an H100); (2) dsv4 tune on the current kernels, to say whether share/tune/h200.json
# still stands on an H200.
# Run: sh scripts/gpu_multi.sh h200a=bench/results/2026-12-06-s71/h200t/run.sh
# Pack: AS=h200a BASE=<1f5e2a9's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin h200t
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab new base
call_snap
timeout 260 $B/dsv4 tune -o "$R/tune-dev.json" > "$R/tune.txt" 2>&1
echo "== tune exit $?"
tail -14 "$R/tune.txt"
call_end

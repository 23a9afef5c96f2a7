#!/bin/sh
# s72 h200c/ (the bundle packed at 2db192bf for mem/: k_attn_one's s70 defaults, the kernels of every s71-s72 call):
# CSA 1 x 4k has run on H100s only since s70. Only on an H200 (an H100 exits at once: its figures are known): the
# attention alone at 1-3 tokens, 4k and 128k, three rounds, with the copy roofline and the naive layout in the same
# runs (bench_kernels prints both).
# Run: sh scripts/gpu_multi.sh mem=bench/results/2026-12-06-s72/h200c/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin h200c
if grep -q H200 "$R/machine.txt"; then
  call_kernels attn 3 "new=$B/bench_kernels" "--attn-only --batch 1,2,3 --contexts 4096,131072"
  call_attn_ab new
  grep -h "copy\|naive" "$R"/attn-new-*.txt | head -6
else
  echo "not an H200: nothing measured"
fi
call_end

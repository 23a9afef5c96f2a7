#!/bin/sh
# s72 h200g/ (prepared; any bundle packed at main, LEAN=1 is enough): PERFORMANCE's "At a glance" on an H200 again -
# its decode rows are s56-s57's and its CSA row H100s' since s70. Only on an H200 (an H100 exits at once): the
# attention alone at 1-3 tokens, 4k / 128k (the naive layout and the copy roofline in the same runs), the experts
# alone at 1-64 tokens, two rounds each; decode on 8 Flash-shaped layers at batch 1 / 4 / 8 / 16 / 64, two rounds.
# ~250 s on the GPU.
# Run: sh scripts/gpu_multi.sh NAME=bench/results/2026-12-06-s72/h200g/run.sh (NAME: the bundle's AS)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin h200g
if grep -q H200 "$R/machine.txt"; then
  call_kernels attn 2 "new=$B/bench_kernels" "--attn-only --batch 1,2,3 --contexts 4096,131072"
  call_attn_ab new
  call_kernels experts 2 "new=$B/bench_kernels" "--experts-only --batch 1,4,8,16,64"
  grep -h "copy\|experts (ref.) " "$R"/experts-new-*.txt
  call_snap
  call_ab 2 "new=$B/bench_cpu --overlap" "b1:--batch 1" "b4:--batch 4" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
  sort "$R/ab.txt" | uniq
else
  echo "not an H200: nothing measured"
fi
call_end

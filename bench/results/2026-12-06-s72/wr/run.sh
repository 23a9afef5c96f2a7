#!/bin/sh
# s72 wr/ (main at the bundle's commit: moew2/'s experts layout landed, the attention's and the indexer's working
# memory reserved at engine open; the base build c34e4e77 as *.base): the whole GPU suite (call_verify, with the
# new test_work_reserve and the logits against the base byte for byte), decode at batch 1 / 16 against the base,
# one round; on an H200, the attention alone at 1-3 tokens, 4k and 128k, two rounds (CSA 1 x 4k has run on H100s
# only).
# Run: sh scripts/gpu_multi.sh wr=bench/results/2026-12-06-s72/wr/run.sh
# Pack: AS=wr BASE=<c34e4e77's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wr
call_verify VERIFY_TIMEOUT=330
call_ab 1 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_snap
if grep -q H200 "$R/machine.txt"; then
  call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,2,3 --contexts 4096,131072"
  call_attn_ab new base
fi
call_end

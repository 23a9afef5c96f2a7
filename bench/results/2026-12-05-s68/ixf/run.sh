#!/bin/sh
# s68 ixf/ (main at the bundle's commit; the base build f3c796b as *.base): k_attn_one<HB, IXF> loads the indexer's
# count and choices right after the PDL wait, before q (the SASS had the 8 q loads issued first, and the rows'
# addresses wait on idx), and with 8 heads a block only those heads' q. The same checks and timings as pipe/:
# test_ops_cuda, the logits against the base's, memcheck on k_attn_one, the attention alone at 1-3 tokens
# (ixf / DSV4_ATTN_ONE_IXF=0 in the same binary / base), decode at batch 1 (16-token prompt, 4k, 128k), 3 rounds.
# Pack: AS=ixf BASE=/tmp/base-gpu sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ixf
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_ops "attn|one"
call_bits
call_memcheck k_attn_one "--attn-only --batch 1,3 --reps 1"
call_snap
call_kernels attn 3 "ixf=$B/bench_kernels;off=env DSV4_ATTN_ONE_IXF=0 $B/bench_kernels;base=$B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,32768,131072"
call_attn_ab ixf off base
call_snap
call_ab 3 "ixf=$B/bench_cpu --overlap;off=env DSV4_ATTN_ONE_IXF=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072"
sort "$R/ab.txt" | uniq
call_end

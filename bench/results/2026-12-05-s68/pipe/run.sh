#!/bin/sh
# s68 pipe/ (main at the bundle's commit; the base build f3c796b as *.base): k_attn_one with its rows' copies and
# scores pipelined (PIPE: two warps issue the copies a 16-row group at a time, each group an mbarrier phase, six
# warps take each 8-row tile's scores once its group has landed; the same MMA chains). s63's aftrace put CSA at one
# token at ~17,500 cycles after the PDL wait, ~4,670 of them issuing the 80 rows' copies and ~2,860 the scores after
# the last copy landed. Here: test_ops_cuda (every attention layout bit for bit), the logits against the base's
# byte for byte, memcheck on k_attn_one, the attention alone at 1-3 tokens (4k / 32k / 128k) PIPE on / off
# (DSV4_ATTN_ONE_PIPE=0, the same binary) / base, and decode on 8 Flash layers at batch 1 (16-token prompt, 4k,
# 128k), three rounds alternating.
# Pack: AS=pipe BASE=/tmp/base-gpu sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pipe
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_ops "attn|one"
call_bits
call_memcheck k_attn_one "--attn-only --batch 1,3 --reps 1"
call_snap
call_kernels attn 2 "pipe=$B/bench_kernels;off=env DSV4_ATTN_ONE_PIPE=0 $B/bench_kernels;base=$B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,32768,131072"
call_attn_ab pipe off base
call_snap
call_ab 3 "pipe=$B/bench_cpu --overlap;off=env DSV4_ATTN_ONE_PIPE=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072"
cat "$R/ab.txt" 2>/dev/null
call_end

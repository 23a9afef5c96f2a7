#!/bin/sh
# Run in s51 (prepared by s49): CSA's 96-row parts with 8 heads a block in decode steps -
# trace/ found the block faster inside (17,550 against 19,280 cycles after the wait) while bench_kernels' back-to-
# back calls measured it slower alone. The same binary, DSV4_ATTN_ONE8_ROWS=96 (8 heads wherever one8 runs) against
# the default (64: CSA from 4k keeps 16), three rounds alternating, at 1 × 4k, 1 × 32k, 1 × 128k and the 16-token
# prompt. If 96 wins in steps, make 96 the default (tune.h's comment, attn.cu's rule) and keep the trace's lesson.
# Pack: NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh (no base needed)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
call_ab 3 "r96=env DSV4_ATTN_ONE8_ROWS=96 $B/bench_cpu --overlap;r64=$B/bench_cpu --overlap" "b1:--batch 1" \
  "b1c4k:--batch 1 --context 4096" "b1c32k:--batch 1 --context 32768" "b1c128k:--batch 1 --context 131072"
call_end

#!/bin/sh
# s67 one/ (one H100 or H200; main with DSV4_ATTN_ONE_ROWS): k_attn_one (the one-pass attention, 1-2 tokens) for
# parts of up to 176 rows against the default 96, past which the four-kernel chain runs. The same bits by
# construction (k_attn_one reproduces the chain's sums; test_ops_cuda checks it on its new "longer" scenario, ~1,250
# rows a query, with the knob at 176). HCA from ~66k tokens on has parts past 96 rows (128k: 1,152 rows, 144 a part,
# padded to 160); s66's 16 parts put 72-row parts there and measured HCA 128k at one token 11.7 against 15.2-17.6 us.
# One binary, knobs alternating: the attention alone at 64k / 96k / 128k and 1 / 2 / 4 tokens (two rounds; 176-rows
# with 8 and with 16 heads a block at one token), test_ops_cuda with the knob at 176 and without, then decode at batch
# 1 with a 128k and a 96k context (two rounds).
# Pack: AS=one NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin one
call_kernels attn 2 "r176=env DSV4_ATTN_ONE_ROWS=176 $B/bench_kernels;r176h16=env DSV4_ATTN_ONE_ROWS=176 DSV4_ATTN_ONE8_ROWS=96 $B/bench_kernels;r96=$B/bench_kernels" \
  "--attn-only --batch 1,2,4 --contexts 65536,98304,131072"
call_attn_ab r176 r176h16 r96
call_snap
for v in 176 96; do
  timeout 200 env DSV4_ATTN_ONE_ROWS=$v $B/test_ops_cuda > "$R/ops_cuda-$v.txt" 2>&1
  echo "== test_ops_cuda DSV4_ATTN_ONE_ROWS=$v exit $?"
  grep -E "longer|FAIL|failed" "$R/ops_cuda-$v.txt" | head -8
  gzip -9 -n "$R/ops_cuda-$v.txt"
done
call_snap
call_ab 2 "r176=env DSV4_ATTN_ONE_ROWS=176 $B/bench_cpu --overlap;r96=$B/bench_cpu --overlap" \
  "b1x128k:--batch 1 --context 131072" "b1x96k:--batch 1 --context 98304"
cat "$R/ab.txt" 2>/dev/null
call_end

#!/bin/sh
# s71 tun8/ (the h200a bundle, c34e4e77; asked of an H200): h200t/'s dsv4 tune (on an H100) took 5-8 tokens to
# parts64 with 64-row score blocks (134.9 against 150.1 us summed for parts32/16 at 8 tokens, -10 %), where the
# built-in table (s33's H200 run, before s59's per-part numerics) has parts32/16 to 8. Here that table (tune8.json:
# the built-in with parts32/16 to 4 tokens and parts64/64 at 5-8) against the built-in: the attention alone at 4-8
# tokens, 4k / 32k / 128k, two rounds, then decode at batch 6 and 8, two rounds.
# Run: sh scripts/gpu_multi.sh h200a=bench/results/2026-12-06-s71/tun8/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin tun8
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_tune_file "$R/tune8.json" '{"max_tokens": 1, "score_rows": 16, "sum": "one8"}, {"max_tokens": 3, "score_rows": 16, "sum": "one"}, {"max_tokens": 4, "score_rows": 16, "sum": "parts32"}, {"max_tokens": 8, "score_rows": 64, "sum": "parts64"}, {"max_tokens": 32, "score_rows": 64, "sum": "wg64"}, {"max_tokens": 0, "score_rows": 64, "sum": "wg128"}'
call_kernels attn 2 "t8=env DSV4_TUNE=$R/tune8.json $B/bench_kernels;builtin=$B/bench_kernels" \
  "--attn-only --batch 4,5,6,8 --contexts 4096,32768,131072"
call_attn_ab t8 builtin
call_snap
call_ab 2 "t8=env DSV4_TUNE=$R/tune8.json $B/bench_cpu --overlap;builtin=$B/bench_cpu --overlap" \
  "b6x4k:--batch 6 --context 4096" "b8x4k:--batch 8 --context 4096" "b8x32k:--batch 8 --context 32768"
sort "$R/ab.txt" | uniq
grep -h -i "tun" "$R"/ab-*.txt | sort | uniq -c | head
call_end

#!/bin/sh
# s67 pv16/ (one H100 or H200; main at the bundle's commit): at a 1M context the one- to four-token attention runs
# the four kernels (its parts exceed k_attn_one's 176 rows), and its weighted sum (k_attn_pv, 32-dimension slices:
# 16 x 8 = 128 blocks a token, each walking its part's ~1,040 rows in order) took ~18.7 of its 36 us (mdp/ ncu).
# Slices of 16 dimensions (parts16: 256 blocks) or 64 (parts64) - the same bits - through tune files against the
# built-in table (one8 / one, which fall back to 32-dimension slices there), the attention alone at 1M and 256k, 1-4
# tokens, two rounds.
# Pack: AS=pv16 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pv16
dev="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) (sm_90)"
for v in parts16 parts64; do
  cat > "$R/tune-$v.json" <<JSON
{"dsv4_tune": 1, "device": "$dev", "attention": [
 {"max_tokens": 4, "score_rows": 16, "sum": "$v"}, {"max_tokens": 8, "score_rows": 16, "sum": "parts32"},
 {"max_tokens": 32, "score_rows": 64, "sum": "wg64"}, {"max_tokens": 0, "score_rows": 64, "sum": "wg128"}]}
JSON
done
call_kernels attn 2 "p16=env DSV4_TUNE=$R/tune-parts16.json $B/bench_kernels;p64=env DSV4_TUNE=$R/tune-parts64.json $B/bench_kernels;tree=$B/bench_kernels" \
  "--attn-only --batch 1,2,4 --contexts 1048576,262144"
call_attn_ab p16 p64 tree
call_end

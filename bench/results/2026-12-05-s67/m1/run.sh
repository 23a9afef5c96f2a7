#!/bin/sh
# s67 m1/ (one H100 or H200; main at the bundle's commit): where HCA's attention at a 1M-token context goes at one and
# two tokens (one34/: 51.1 / 67.6 us for 8.5 / 17 MB of rows, 6-8 % of copy; its parts are ~1,040 rows, so the four
# kernels run: k_attn_qpack, k_attn_qk (16-row score blocks at 1-2 tokens), k_attn_md16 (a warp a (token, head)
# walking all 8,320 rows' scores twice), k_attn_pv (parts32: a cluster of the 8 parts a 32-dimension slice)).
# ncu, each kernel alone at the GPU's own clocks, with and without its cache flush; then score blocks of 64 rows
# (a tune file, the same bits) against the built-in table, the attention alone at 1M and 128k, 1-4 tokens.
# Pack: AS=m1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin m1
for cc in all none; do
  timeout 150 ncu --clock-control none --cache-control $cc --metrics gpu__time_duration.sum -k 'regex:^k_attn_(qpack|qk|md16|pv|hpv)' \
    --print-summary per-kernel $B/bench_kernels --attn-only --batch 1,2 --contexts 1048576 --reps 3 > "$R/ncu-$cc.txt" 2>&1
  echo "== ncu cache $cc exit $?"
  grep -E "k_attn|gpu__time_duration" "$R/ncu-$cc.txt" | head -40
done
call_snap
dev="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) (sm_90)"
cat > "$R/tune64.json" <<JSON
{"dsv4_tune": 1, "device": "$dev", "attention": [
 {"max_tokens": 1, "score_rows": 64, "sum": "one8"}, {"max_tokens": 3, "score_rows": 64, "sum": "one"},
 {"max_tokens": 8, "score_rows": 64, "sum": "parts32"}, {"max_tokens": 32, "score_rows": 64, "sum": "wg64"},
 {"max_tokens": 0, "score_rows": 64, "sum": "wg128"}]}
JSON
call_kernels attn 2 "sr64=env DSV4_TUNE=$R/tune64.json $B/bench_kernels;tree=$B/bench_kernels" \
  "--attn-only --batch 1,2,4 --contexts 1048576,524288"
call_attn_ab sr64 tree
call_end

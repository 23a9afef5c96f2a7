#!/bin/sh
# s67 one34/ (one H100 or H200; main at the bundle's commit): with k_attn_one taking parts of up to 176 rows (one/),
# is it also the faster choice at 3-4 tokens on long HCA contexts? The tuned table takes the four kernels
# (parts32) there: share/tune/h200.json measured one at 4 tokens 128.7 against 114.4 us summed over CSA 4k + HCA
# 4k / 32k / 128k, when HCA 128k could not take it. A tune file with one at 2-4 tokens (made here for this device;
# one8 at 1 as built in) against the built-in table, alternating, two rounds: the attention alone at 3 / 4 tokens,
# 4k-128k. Then, for the record, the attention at one and two tokens on a 1M context (the four kernels: its parts
# are ~1,040 rows).
# Pack: AS=one34 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin one34
dev="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) (sm_90)"
cat > "$R/tune34.json" <<JSON
{"dsv4_tune": 1, "device": "$dev", "attention": [
 {"max_tokens": 1, "score_rows": 16, "sum": "one8"}, {"max_tokens": 4, "score_rows": 16, "sum": "one"},
 {"max_tokens": 8, "score_rows": 16, "sum": "parts32"}, {"max_tokens": 32, "score_rows": 64, "sum": "wg64"},
 {"max_tokens": 0, "score_rows": 64, "sum": "wg128"}]}
JSON
call_kernels attn 2 "one34=env DSV4_TUNE=$R/tune34.json $B/bench_kernels;tree=$B/bench_kernels" \
  "--attn-only --batch 3,4 --contexts 4096,32768,65536,98304,131072"
call_attn_ab one34 tree
call_snap
timeout 150 $B/bench_kernels --attn-only --batch 1,2 --contexts 1048576 > "$R/m1-tree-1.txt" 2>&1
echo "== 1M exit $?"
grep -E "^(CSA|HCA)" "$R/m1-tree-1.txt"
call_end

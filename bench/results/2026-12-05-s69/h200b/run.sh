#!/bin/sh
# s69 h200b/ (an H200; main at the bundle's commit): s67's two shape choices, measured there on H100s only, on an
# H200. (1) one3: k_attn_one to 3 tokens (the built-in table, "tree") against a table with it to 2 and the four
# kernels (parts32) at 3 (tune2.json): the attention alone at 2-3 tokens, 4k / 32k / 128k, two rounds, and decode at
# batch 3. (2) mdp: the four kernels' part maxima and sums a warp a part (k_attn_mdp, the default past 768 rows at
# 1-4 tokens) against k_attn_md16 (DSV4_ATTN_MDP=0): the attention alone at 1, 2, 4 tokens on 128k / 256k / 1M,
# two rounds, and decode at batch 1 on a ~1M context.
# Pack: AS=h200b LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin h200b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_tune_file "$R/tune2.json" '{"max_tokens": 1, "score_rows": 16, "sum": "one8"}, {"max_tokens": 2, "score_rows": 16, "sum": "one"}, {"max_tokens": 8, "score_rows": 16, "sum": "parts32"}, {"max_tokens": 32, "score_rows": 64, "sum": "wg64"}, {"max_tokens": 0, "score_rows": 64, "sum": "wg128"}'
call_kernels attn 2 "tree=$B/bench_kernels;two=env DSV4_TUNE=$R/tune2.json $B/bench_kernels" \
  "--attn-only --batch 2,3 --contexts 4096,32768,131072"
call_attn_ab tree two
mv "$R/attn-ab.txt" "$R/attn-ab-one3.txt"
call_snap
call_ab 2 "tree=$B/bench_cpu --overlap;two=env DSV4_TUNE=$R/tune2.json $B/bench_cpu --overlap" \
  "b3x4k:--batch 3 --context 4096" "b3x128k:--batch 3 --context 131072"
mv "$R/ab.txt" "$R/ab-one3.txt"
sort "$R/ab-one3.txt" | uniq
call_snap
call_kernels attn 2 "mdp=$B/bench_kernels;md16=env DSV4_ATTN_MDP=0 $B/bench_kernels" \
  "--attn-only --batch 1,2,4 --contexts 1048576,262144,131072"
python3 bench/attn_ab.py "$R" mdp md16 > "$R/attn-ab-mdp.txt" 2>&1
cat "$R/attn-ab-mdp.txt"
call_snap
call_ab 2 "mdp=$B/bench_cpu --overlap;md16=env DSV4_ATTN_MDP=0 $B/bench_cpu --overlap" "b1x1m:--batch 1 --context 1040000"
sort "$R/ab.txt" | uniq
call_end

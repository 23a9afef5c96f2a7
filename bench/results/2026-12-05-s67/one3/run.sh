#!/bin/sh
# s67 one3/ (an H200 preferably; main at the bundle's commit): one34/ (an H100) found k_attn_one ("one", 16 heads a
# block) at 3 tokens 17-47 % faster than the tuned table's four kernels (parts32) on every shape, CSA and HCA 4k-128k
# (96 blocks: 12 clusters of 8, one wave), and at 4 tokens slower on CSA and long HCA (+22-35 %: 128 blocks, two
# waves). dsv4 tune timed 1, 2, 4, 8, ... tokens only, so its table could not say so. Here: dsv4 tune (now timing 3
# tokens too) writes this GPU's table; a table with one to 3 tokens (tune3.json, made here for this device) against
# the built-in one (one to 2), alternating: the attention alone at 3 tokens, and decode on 8 Flash layers at batch 3
# with a 16-token prompt, a 4k and a 128k context (two rounds).
# Pack: AS=one3 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin one3
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
dev="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) (sm_90)"
cat > "$R/tune3.json" <<JSON
{"dsv4_tune": 1, "device": "$dev", "attention": [
 {"max_tokens": 1, "score_rows": 16, "sum": "one8"}, {"max_tokens": 3, "score_rows": 16, "sum": "one"},
 {"max_tokens": 8, "score_rows": 16, "sum": "parts32"}, {"max_tokens": 32, "score_rows": 64, "sum": "wg64"},
 {"max_tokens": 0, "score_rows": 64, "sum": "wg128"}]}
JSON
call_kernels attn 2 "one3=env DSV4_TUNE=$R/tune3.json $B/bench_kernels;tree=$B/bench_kernels" \
  "--attn-only --batch 2,3 --contexts 4096,32768,131072"
call_attn_ab one3 tree
call_snap
call_ab 2 "one3=env DSV4_TUNE=$R/tune3.json $B/bench_cpu --overlap;tree=$B/bench_cpu --overlap" \
  "b3:--batch 3" "b3x4k:--batch 3 --context 4096" "b3x128k:--batch 3 --context 131072"
cat "$R/ab.txt" 2>/dev/null
call_snap
timeout 240 $B/dsv4 tune -o "$R/tune-dev.json" > "$R/tune.txt" 2>&1
echo "== tune exit $?"
tail -14 "$R/tune.txt"
call_end

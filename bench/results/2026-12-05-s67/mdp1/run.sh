#!/bin/sh
# s67 mdp/ (one H100 or H200; main with k_attn_mdp): m1/ found k_attn_md16 ~21 us of HCA's ~51 at one token on a 1M
# context (its one warp a (token, head) walks 8,320 rows' scores twice). k_attn_mdp: a block a (token, head), a warp a
# part, eight pairs a lane in flight; taken to 4 tokens past 768 rows a token (DSV4_ATTN_MDP_ROWS; 0: never). The
# same bits: test_ops_cuda first (its "longer" scenario's tuned alternatives run the four kernels with it at 1-4
# tokens, bit for bit against k_attn_one). Then the attention alone, it against md16 in one binary (two rounds),
# ncu of the chain's kernels at 1M, and decode at batch 1 on a ~1M and a 128k context.
# Pack: AS=mdp LEAN=0 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mdp
timeout 200 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "longer|FAIL|failed|PASSED" "$R/ops_cuda.txt" | head -8
gzip -9 -n "$R/ops_cuda.txt"
call_snap
call_kernels attn 2 "mdp=$B/bench_kernels;md16=env DSV4_ATTN_MDP_ROWS=0 $B/bench_kernels" \
  "--attn-only --batch 1,2,4 --contexts 1048576,262144,131072"
call_attn_ab mdp md16
call_snap
timeout 100 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
  -k 'regex:^k_attn_(qpack|qk|md16|mdp|pv)' --print-summary per-kernel $B/bench_kernels --attn-only --batch 1 \
  --contexts 1048576 --reps 3 > "$R/ncu.txt" 2>&1
echo "== ncu exit $?"
grep -v "==PROF==" "$R/ncu.txt" | grep -E "^  [a-z].*k_attn|gpu__time" | paste - - | sed 's/(attn_args[^)]*)//' | awk '{$1=$1; print}'
call_snap
call_ab 2 "mdp=$B/bench_cpu --overlap;md16=env DSV4_ATTN_MDP_ROWS=0 $B/bench_cpu --overlap" \
  "b1x1m:--batch 1 --context 1040000" "b1x128k:--batch 1 --context 131072"
cat "$R/ab.txt" 2>/dev/null
call_end

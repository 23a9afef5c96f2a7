#!/bin/sh
# s67 pvl/ (one H100 or H200; main with k_attn_pv<NT, false, true, 128>): at a 1M context the weighted sum (k_attn_pv,
# a cluster of the 8 parts a 32-dimension slice) walks a part's ~1,040 rows in 64-row tiles with one tile's loads
# ahead - ~18.7 of the attention's 36 us at one token (mdp/ncu.txt), about one round trip a tile. Tiles of 128 rows
# (AM_PV_LONG) to 4 tokens past 768 rows, slices of up to 32 dimensions: half the round trips, the same 16-row steps
# in the same order (the same bits; every shipped k_attn_pv's SASS unchanged). test_ops_cuda first (its "longer"
# scenario runs them through the tuned alternatives at 1-4 tokens, ~156-row parts: a whole tile and a partial one),
# then the attention alone against DSV4_ATTN_PV_LONG=0 (two rounds) and decode at 1 x ~1M (two rounds).
# Pack: AS=pvl NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pvl
timeout 200 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "longer|FAIL|failed|PASSED" "$R/ops_cuda.txt" | head -8
gzip -9 -n "$R/ops_cuda.txt"
call_snap
call_kernels attn 2 "pvl=$B/bench_kernels;pv64=env DSV4_ATTN_PV_LONG=0 $B/bench_kernels" \
  "--attn-only --batch 1,2,4 --contexts 1048576,262144"
call_attn_ab pvl pv64
call_snap
call_ab 2 "pvl=$B/bench_cpu --overlap;pv64=env DSV4_ATTN_PV_LONG=0 $B/bench_cpu --overlap" \
  "b1x1m:--batch 1 --context 1040000"
cat "$R/ab.txt" 2>/dev/null
call_end

#!/bin/sh
# Where the top-k cluster loses at 32,768 candidates (128k contexts; s47: the indexer alone 27.6 against 20.6 us
# at 1 token, 95 against 74 at 16). *.base = a build with -DIX_TRACE (k_idx_topk's thread 0 of token 0's blocks
# prints clock64 differences: the wait, the keys and bounds, each pass, the output counts' exchange, the
# output), run with the cluster forced (DSV4_IX_CL=8) and off (0); then the untraced bench_kernels with the
# cluster off / forced at 2, 4, 8 (two rounds).
# Pack: BASE=<a build-gpu with -DCMAKE_CUDA_FLAGS=-DIX_TRACE> LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin cltrace
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
for c in 8 0; do
  DSV4_IX_CL=$c timeout 120 $B/bench_kernels.base --attn-only --batch 1,16 > "$R/trace-cl$c.txt" 2>&1
  echo "trace cl$c rc $?: $(grep -c ixtrace "$R/trace-cl$c.txt") lines"
  grep ixtrace "$R/trace-cl$c.txt" | grep "N 32768" | head -12
done
snap
for i in 1 2; do
  for c in 0 8 4 2; do
    DSV4_IX_CL=$c timeout 120 $B/bench_kernels --attn-only --batch 1,16 > "$R/attn-cl$c-$i.txt" 2>&1
    echo "cl$c ($i): $(grep -E 'top-512 of 32768' "$R/attn-cl$c-$i.txt" | tr -s ' ' | tr '\n' '|')"
  done
  snap
done
call_end

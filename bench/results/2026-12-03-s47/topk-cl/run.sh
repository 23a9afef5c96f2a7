#!/bin/sh
# s47 call 2: the indexer's top-k as a cluster of 8, 4 or 2 blocks a token (k_idx_topk<CL>: each block a slice
# of the candidates, the bounds and each pass's buckets added over the cluster through distributed shared memory,
# the output placed after the blocks before) - the most whose blocks the SMs hold at once (8 to 16 tokens, 2 to
# 66) - where some token may have more than the small path's 8,192 candidates; the same indices
# (test_ops_cuda's indexer_large compares it with one block a token, with and without the small path, clusters
# of 2 and 4, and with the CPU). The whole suite (logits against
# main's b92ec8c byte for byte), memcheck of k_idx_topk, the attention + indexer tables (now to 1M tokens at
# batch 1 / 16) with the clusters and without (DSV4_IX_CL=0, the same binary) 2 rounds, decode with and without
# at 1 / 16 / 64 x 128k, 1 x 1M, and at 1 / 16 x 4k in an engine sized for 1M (--max-context: every token on
# the small path, block 0 alone, the cluster's launch the only change).
# Pack: BASE=<b92ec8c's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin topk-cl
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh | tail -14
zcat "$R/ops_cuda.txt.gz" | grep -E "indexer_topk, 34,999" | head -8
timeout 200 compute-sanitizer --tool memcheck --kernel-name "regex:k_idx_topk" --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 1,16 --reps 1 > "$R/san-topk.txt" 2>&1
echo "== memcheck k_idx_topk exit $?"; grep -E "ERROR SUMMARY" "$R/san-topk.txt" | tail -1
call_kernels attn 2 "cl=$B/bench_kernels;one=env DSV4_IX_CL=0 $B/bench_kernels" "--attn-only --batch 1,16,64"
for f in "$R"/attn-*.txt; do echo "== $(basename "$f")"; grep -E "^top-512" "$f" | awk '{print $3, $4, $5, $7, $10}' | tail -16; done
call_ab 2 "new=$B/bench_cpu --overlap;one=env DSV4_IX_CL=0 $B/bench_cpu --overlap" "b1c128k:--batch 1 --context 131072" \
  "b16c128k:--batch 16 --context 131072" "b64c128k:--batch 64 --context 131072" "b1c1m:--batch 1 --context 1048576" \
  "b1x1m:--batch 1 --context 4096 --max-context 1048576" "b16x1m:--batch 16 --context 4096 --max-context 1048576"
call_end

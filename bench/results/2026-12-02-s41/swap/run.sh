#!/bin/sh
# s41 call 2: the indexer's scores kernel with the keys as the MMA's M (each warp 16 keys of a tile, all 64
# heads as the N: no shared-memory pass of the decoded keys, no moves of the query's fragments, one barrier a
# tile, two staging slots), the format a template constant, a token's tiles split evenly over the blocks at
# run time (up to 16 a block). The same products in the same chains and the same order of the heads' sums: the
# suite's logits against the base build now include 2,100 tokens on 3 layers (the indexer choosing 512 of up to
# 525). Then memcheck on the scores, the indexer alone new / base, decode new / base at batch 1 (16 tokens and
# 4k), 16 x 32k, 16 x 128k, 64 x 32k. Pack: BASE=<c95983a's build> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin swap
VERIFY_TIMEOUT=330 sh scripts/gpu_verify.sh
zcat $R/ops_cuda.txt.gz | grep -E "indexer_topk, 34" | head -4
timeout 120 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_score_tc --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 4 --reps 1 > $R/san-scores.txt 2>&1
echo "== memcheck scores exit $?"; grep -E "ERROR SUMMARY" $R/san-scores.txt | tail -1
for i in 1 2; do
  timeout 100 $B/bench_kernels --attn-only --batch 1,16,64 > $R/attn-new-$i.txt 2>&1
  timeout 100 $B/bench_kernels.base --attn-only --batch 1,16,64 > $R/attn-base-$i.txt 2>&1
done
grep -A13 "FP4 keys" $R/attn-new-1.txt; grep -A13 "FP4 keys" $R/attn-base-1.txt
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1-4k:--batch 1 --context 4096" \
  "b16-32k:--batch 16 --context 32768" "b16-128k:--batch 16 --context 131072" "b64-32k:--batch 64 --context 32768"
call_end

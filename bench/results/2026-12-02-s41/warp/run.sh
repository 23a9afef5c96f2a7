#!/bin/sh
# s41 call 4: the scores kernel's warps stage their own 16 keys of each tile (their own two slots, their lanes
# issuing the copies, __syncwarp instead of a block barrier a tile: after the query's barrier the warps run
# their tiles without waiting for each other; the ncu of 584bcea in ../unroll/ put 14 % of the samples on that
# barrier). Against 584bcea (base): the suite (logits with the 2,100-token cases), memcheck and racecheck on
# the scores, the indexer alone new / base, decode new / base at batch 1 (16 tokens, 4k), 16 x 32k, 16 x 128k,
# 64 x 32k. Pack: BASE=<584bcea's build> NOTOK=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin warp
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
zcat $R/ops_cuda.txt.gz | grep -E "indexer_topk, 34" | head -4
timeout 100 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_score_tc --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 4 --reps 1 > $R/san-scores.txt 2>&1
echo "== memcheck scores exit $?"; grep -E "ERROR SUMMARY" $R/san-scores.txt | tail -1
timeout 100 compute-sanitizer --tool racecheck --kernel-name kns=k_idx_score_tc --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 4 --reps 1 > $R/race-scores.txt 2>&1
echo "== racecheck scores exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $R/race-scores.txt | tail -2
for i in 1 2; do
  timeout 100 $B/bench_kernels --attn-only --batch 1,16,64 > $R/attn-new-$i.txt 2>&1
  timeout 100 $B/bench_kernels.base --attn-only --batch 1,16,64 > $R/attn-base-$i.txt 2>&1
done
grep -A13 "FP4 keys" $R/attn-new-1.txt; grep -A13 "FP4 keys" $R/attn-base-1.txt
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1-4k:--batch 1 --context 4096" \
  "b16-32k:--batch 16 --context 32768" "b16-128k:--batch 16 --context 131072" "b64-32k:--batch 64 --context 32768"
call_end

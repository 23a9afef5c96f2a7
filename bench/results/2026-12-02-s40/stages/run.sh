#!/bin/sh
# s40 call 2: (1) k_idx_score_tc's keys through a ring of staging slots - a block's tiles (up to four) in flight at
# once where they fit in 24 KB (FP4 keys: 4.3 KB a tile; BF16 / FP32 one slot, as before), DSV4_IX_STAGES=1 the
# old schedule in the same binary; the same scores. (2) k_mma_fp8s's issue side trimmed (whole tiles' weight
# copies by a stepped pointer without selects, the activations' chunks one address each): ~180 -> ~100
# instructions a pair; the same bits. The suite (bits against .base = 6bd09e3), memcheck on the scores at 4 x
# 128k (four tiles a block), the indexer alone both ways, a node trace at batch 1, decode new / base at batch
# 1 and new / DSV4_IX_STAGES=1 at 16 x 32k and 16 x 128k. Pack: BASE=<6bd09e3's build> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin stages
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
zcat $R/ops_cuda.txt.gz | grep -E "indexer_topk, 34" | head -4
timeout 200 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_score_tc --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 4 --reps 1 > $R/san-scores.txt 2>&1
echo "== memcheck scores exit $?"; grep -E "ERROR SUMMARY" $R/san-scores.txt | tail -1
for i in 1 2; do
  timeout 120 $B/bench_kernels --attn-only --batch 1,16,64 > $R/attn-new-$i.txt 2>&1
  DSV4_IX_STAGES=1 timeout 120 $B/bench_kernels --attn-only --batch 1,16,64 > $R/attn-one-$i.txt 2>&1
done
grep -A13 "FP4 keys" $R/attn-new-1.txt; grep -A13 "FP4 keys" $R/attn-one-1.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 64 --batch 1 --overlap"
grep -E "k_mma_fp8s" $R/kt-new-b1.txt | head -3
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 150 sh scripts/gpu_ab.sh "b1:--batch 1"
AB_REPEAT=2 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;one=env DSV4_IX_STAGES=1 $B/bench_cpu --overlap" \
  timeout 200 sh scripts/gpu_ab.sh "b16-32k:--batch 16 --context 32768" "b16-128k:--batch 16 --context 131072"
rm -f $R/ab-*.json
call_end

#!/bin/sh
# Prepared in s39, NOT run (the device time ran out): where the indexer's time goes at batch 16 x 128k (111 us a
# CSA layer on FP4 keys, ~96 of them the scores kernel at 370 GB/s; three blocks an SM instead of two moved it 1 %,
# s39 stage/). ncu on one launch each of k_idx_score_tc<128> and k_idx_topk at FP4 keys, 16 tokens, 32,768
# candidates: bench_kernels --attn-only --batch 16 --reps 5 times FP32 keys at 4 contexts, then FP4 keys at 4
# (each a warm-up and 5 calls, one scores and one top-k launch a call; the naive baseline launches neither), so
# the FP4 128k warm-up is launch 4 x 6 + 3 x 6 = 42 of each kernel (skip 42, then the first timed call: 43).
# Pack: LEAN=1 NOTOK=1 (main).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin scores-ncu
for k in k_idx_score_tc:sc k_idx_topk:tk; do
  kern=${k%%:*} tag=${k#*:}
  timeout 250 ncu --launch-skip 43 --launch-count 1 -k regex:$kern --section SpeedOfLight --section WarpStateStats \
    --section SourceCounters --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    $B/bench_kernels --attn-only --batch 16 --reps 5 > $R/ncu-$tag.txt 2>&1
  timeout 250 ncu --launch-skip 43 --launch-count 1 -k regex:$kern --section SourceCounters --page source \
    --print-source sass --csv $B/bench_kernels --attn-only --batch 16 --reps 5 > $R/ncu-$tag-sass.csv 2>&1
  gzip -9 $R/ncu-$tag-sass.csv
  echo "== $tag"; grep -E "Grid Size|Duration|Warp Cycles Per Issued|Stall|Issued Ipc|Achieved Occupancy|Top" \
    $R/ncu-$tag.txt | head -24
done
call_end

#!/bin/sh
# s41 call 1: s40's prepared wip/mma-fp8-ntt (rebased on c95983a as 26beb81) - k_mma_fp8's two n tiles' MMA
# chains side by side at 9-32 tokens (wo_a at batch 16); the suite also covers c95983a's host-only mends (the
# scores' staging size from dsv4_kv_idx_floats). Then s39's prepared ncu of k_idx_score_tc at FP4 keys, 16 tokens,
# 32,768 candidates (bench_kernels --attn-only --batch 16 --reps 5: FP32 keys at 4 contexts, then FP4 at 4, a
# warm-up and 5 calls each, so FP4 128k's first timed call is launch 43; the indexer's code is main's).
# Pack (branch tree): BASE=<build of c95983a> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ntt
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
call_trace new-b16 "--batch 16"
grep -E "k_mma_fp8<" $R/kt-new-b16.txt | head -8
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b16:--batch 16" "b12:--batch 12"
timeout 150 ncu --launch-skip 43 --launch-count 1 -k regex:k_idx_score_tc --section SpeedOfLight --section WarpStateStats \
  --section SourceCounters --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
  --section ComputeWorkloadAnalysis --section InstructionStats \
  $B/bench_kernels --attn-only --batch 16 --reps 5 > $R/ncu-sc.txt 2>&1
timeout 150 ncu --launch-skip 43 --launch-count 1 -k regex:k_idx_score_tc --section SourceCounters --page source \
  --print-source sass --csv $B/bench_kernels --attn-only --batch 16 --reps 5 > $R/ncu-sc-sass.csv 2>&1
gzip -9 $R/ncu-sc-sass.csv
grep -E "Grid Size|Duration|Warp Cycles Per Issued|Stall|Issued Ipc|Achieved Occupancy|Registers|Throughput" $R/ncu-sc.txt | head -30
call_end

#!/bin/sh
# s41 call 3: the scores kernel's d loop unrolled (four 32-dimension steps a tile, Flash's 128), with three
# blocks an SM (__launch_bounds__(128, 3): unrolled at four it spilled 44 bytes), against 584bcea (base). The
# logits against the base build (gpu_bits.sh, with the 2,100-token cases) and test_ops_cuda; the indexer alone
# new / base; ncu on the base's scores kernel at 16 x 128k (FP4 keys, launch 43 as in ../ntt/). Pack (main + the
# change): BASE=<584bcea's build> NOTOK=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin unroll
BITS_REPEAT=2 timeout 150 sh scripts/gpu_bits.sh
timeout 120 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops exit $?"; grep -E "PASSED|FAILED" $R/ops_cuda.txt | tail -2
gzip -9 $R/ops_cuda.txt
for i in 1 2; do
  timeout 100 $B/bench_kernels --attn-only --batch 1,16,64 > $R/attn-new-$i.txt 2>&1
  timeout 100 $B/bench_kernels.base --attn-only --batch 1,16,64 > $R/attn-base-$i.txt 2>&1
done
grep -A13 "FP4 keys" $R/attn-new-1.txt; grep -A13 "FP4 keys" $R/attn-base-1.txt
timeout 120 ncu --launch-skip 43 --launch-count 1 -k regex:k_idx_score_tc --section SpeedOfLight --section WarpStateStats \
  --section SourceCounters --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
  --section ComputeWorkloadAnalysis --section InstructionStats \
  $B/bench_kernels.base --attn-only --batch 16 --reps 5 > $R/ncu-sc.txt 2>&1
timeout 120 ncu --launch-skip 43 --launch-count 1 -k regex:k_idx_score_tc --section SourceCounters --page source \
  --print-source sass --csv $B/bench_kernels.base --attn-only --batch 16 --reps 5 > $R/ncu-sc-sass.csv 2>&1
gzip -9 $R/ncu-sc-sass.csv
grep -E "Duration|Warp Cycles Per Issued|Issued Ipc|Achieved Occupancy|Registers|Throughput|Executed Instructions  " $R/ncu-sc.txt | head -20
call_end

#!/bin/sh
# s56 next/: for the next session, on the landed tree (dd9d452; one binary): a node trace of decode at batch 16
# (the experts now with two row blocks a block) and ncu's warp states by SASS line for the two-row-block
# kernels at 16 tokens (gate / up and down: k_moe16<MXFP4, 1 plane, DOWN, 1 n tile, RB 2>), as ncu/ has them
# for one row block.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
call_trace b16 "--batch 16"
for d in 0 1; do
  timeout 200 ncu --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats \
    --section Occupancy --kernel-name-base demangled -k "regex:k_moe16<.int.4, .int.1, .bool.$d, .int.1, .int.2, .int.8>" \
    --launch-skip 4 --launch-count 1 -o "$R/rb2-d$d" $B/bench_kernels --experts-only --batch 16 --reps 8 \
    > "$R/prof-rb2-d$d.log" 2>&1
  echo "ncu down=$d rc=$?"
  if [ -f "$R/rb2-d$d.ncu-rep" ]; then
    ncu -i "$R/rb2-d$d.ncu-rep" --page details > "$R/det-rb2-d$d.txt" 2>&1
    ncu -i "$R/rb2-d$d.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip > "$R/src-rb2-d$d.csv.gz"
    rm -f "$R/rb2-d$d.ncu-rep"
    grep -E "Duration|Warp Cycles Per Issued|Registers Per|Achieved Occupancy|DRAM Throughput|Waves Per SM" \
      "$R/det-rb2-d$d.txt" | head -8
    python3 bench/ncu_stalls.py "$R/src-rb2-d$d.csv.gz" 12 > "$R/stalls-rb2-d$d.txt" 2>&1; head -30 "$R/stalls-rb2-d$d.txt"
  fi
done
call_end

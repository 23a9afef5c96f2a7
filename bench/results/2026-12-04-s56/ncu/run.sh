#!/bin/sh
# s56 ncu/ (s55 next/moe-ncu.sh with the kernel regex mended: ncu names the template arguments "(int)4", so s56 verify/ profiled nothing): where k_moe16's warps wait in its
# decode loop, before any change to it. ldsm/ cut the loop from 306 to 292 SASS a group and got 3 % slower, so the
# count is not what bounds it: this asks ncu's source counters (warp-state samples by SASS line) for the gate / up
# pass at 1 and at 16 tokens (reference numerics, MXFP4: k_moe16<4, 1, false, 1, 1, 8>), beside its occupancy and
# issue statistics. Run on the tree as it is (one binary):
#   KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh; then on the device: sh bench/results/2026-12-04-s55/next/moe-ncu.sh
# Reading it: bench/ncu_stalls.py's regions and top instructions (stalls-b1.txt, stalls-b16.txt); the DEPBAR (the
# ring's cp.async wait) against the LDS / F2FP / HMMA chains says whether bytes or the chain bound a group.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ncu
for b in 1 16; do
  timeout 200 ncu --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats \
    --section Occupancy --kernel-name-base demangled -k 'regex:k_moe16<.int.4, .int.1, .bool.0, .int.1, .int.1, .int.8>' --launch-skip 4 \
    --launch-count 1 -o "$R/b$b" $B/bench_kernels --experts-only --batch $b --reps 8 > "$R/prof-b$b.log" 2>&1
  echo "ncu b$b rc=$?"
  if [ -f "$R/b$b.ncu-rep" ]; then
    ncu -i "$R/b$b.ncu-rep" --page details > "$R/det-b$b.txt" 2>&1
    ncu -i "$R/b$b.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip > "$R/src-b$b.csv.gz"
    rm -f "$R/b$b.ncu-rep"
    grep -E "Duration|Warp Cycles Per Issued|Issued Warp|Eligible Warps|Registers Per|Achieved Occupancy|DRAM Throughput" \
      "$R/det-b$b.txt" | head -12
    python3 bench/ncu_stalls.py "$R/src-b$b.csv.gz" 16 > "$R/stalls-b$b.txt" 2>&1; head -40 "$R/stalls-b$b.txt"
  fi
done
call_end

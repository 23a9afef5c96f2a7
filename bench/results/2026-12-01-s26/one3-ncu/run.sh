#!/bin/sh
# s26 call 10: where k_attn_one v3's time goes at batch 1 (15.6 us a CSA layer alone against the four kernels' 16.2;
# HCA 4k 10.8 against 15.6): ncu with source-level sampling at batch 1 (CSA 4k), one.json
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r10; rm -rf $R; mkdir -p $R; touch $R/.start
for b in 1; do
  DSV4_TUNE=bench/results/2026-12-01-s26/one.json timeout 150 ncu --clock-control none --set full --import-source no \
    -k regex:'^k_attn_one$' --launch-skip 5 --launch-count 1 -o $R/one-b$b $B/bench_kernels --attn-only --batch $b --reps 8 > $R/ncu-b$b.txt 2>&1
  echo "b$b rc=$?"; tail -3 $R/ncu-b$b.txt
  ncu -i $R/one-b$b.ncu-rep --page details > $R/details-b$b.txt 2>&1
  ncu -i $R/one-b$b.ncu-rep --page source --csv --print-source sass > $R/src-b$b.csv 2>&1; gzip -9 $R/src-b$b.csv
  grep -E "Duration|Registers|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|Dynamic Shared|Cluster" $R/details-b$b.txt | head -20
done
rm -f $R/*.ncu-rep
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

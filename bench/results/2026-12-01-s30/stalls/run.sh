#!/bin/sh
# (prepared in s30, NOT run: the device time ran out) Where k_moe16's decode warps wait at 1 token (main, 43f5dfc's
# code): ncu's warp-state samples by SASS instruction (DEVELOPING's method, bench/ncu_stalls.py) of the reference
# gate / up and down kernels (k_moe16<4, 1, false|true, 1, 1, 8>: NP 1 = reference numerics' one plane) in
# bench_kernels --experts-only --batch 1, the 4th launch of each (after warm-up), and the scheduler / warp-state
# sections. BASE is not used: gpu_pack.sh; carry .gpu. Then, here:
#   python3 bench/ncu_stalls.py bench/results/2026-12-01-s30/stalls/src-gu.csv.gz 40
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin stalls
for k in gu:false dn:true; do
  tag=${k%%:*} down=${k#*:}
  timeout 150 ncu --set full --import-source no --kernel-name-base demangled -k "regex:k_moe16<4, 1, $down, 1, 1, 8>" \
    --launch-skip 3 \
    --launch-count 1 -o $R/rep-$tag $B/bench_kernels --experts-only --batch 1 > $R/ncu-$tag.txt 2>&1
  echo "ncu $tag rc=$?"
  ncu -i $R/rep-$tag.ncu-rep --page source --csv --print-source sass | gzip > $R/src-$tag.csv.gz
  ncu -i $R/rep-$tag.ncu-rep --page details > $R/details-$tag.txt 2>&1
  grep -E "Duration|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Achieved Occupancy|DRAM Throughput" $R/details-$tag.txt | head -12
  python3 bench/ncu_stalls.py $R/src-$tag.csv.gz 25 | head -40
  rm -f $R/rep-$tag.ncu-rep
done
call_end

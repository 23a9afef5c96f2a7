#!/bin/sh
# Where k_moe16's decode warps wait at 1 token (main): ncu's warp-state samples by SASS instruction (DEVELOPING's
# method, bench/ncu_stalls.py) of the reference gate / up and down kernels (k_moe16<4, 1, false|true, 1, 1, 8>)
# in bench_kernels --experts-only --batch 1, the 4th launch of each (after warm-up), and the details page.
# ncu matches demangled names as k_moe16<(int)4, (int)1, (bool)0, ...> (r1 matched nothing with s30's regex).
# gpu_pack.sh; carry .gpu. Then, here: python3 bench/ncu_stalls.py bench/results/2026-12-01-s31/r2/src-gu.csv.gz 40
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r2
for k in gu:0 dn:1; do
  tag=${k%%:*} down=${k#*:}
  timeout 200 ncu --set full --import-source no --kernel-name-base demangled \
    -k "regex:k_moe16<.int.4, .int.1, .bool.$down, .int.1, .int.1, .int.8>" \
    --launch-skip 3 --launch-count 1 -o $R/rep-$tag $B/bench_kernels --experts-only --batch 1 > $R/ncu-$tag.txt 2>&1
  echo "ncu $tag rc=$?"
  ncu -i $R/rep-$tag.ncu-rep --page source --csv --print-source sass | gzip > $R/src-$tag.csv.gz
  ncu -i $R/rep-$tag.ncu-rep --page details > $R/details-$tag.txt 2>&1
  ncu -i $R/rep-$tag.ncu-rep --page raw --csv 2>/dev/null | gzip > $R/raw-$tag.csv.gz
  grep -E "Duration|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Achieved Occupancy|DRAM Throughput" $R/details-$tag.txt | head -12
  python3 bench/ncu_stalls.py $R/src-$tag.csv.gz 25 | head -40
  rm -f $R/rep-$tag.ncu-rep
done
call_end

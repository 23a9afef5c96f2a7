#!/bin/sh
# Where CSA's k_attn_one waits at 1 token, 4k context (main): ncu --set full of the 4th k_attn_one launch of
# bench_kernels --attn-only --batch 1 (its first case, CSA 640 rows), warp-state samples by SASS instruction
# (bench/ncu_stalls.py), the details page. gpu_pack.sh; carry .gpu. Then, here:
# python3 bench/ncu_stalls.py bench/results/2026-12-01-s32/attn-ncu/src.csv.gz 40
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin attn-ncu
timeout 240 ncu --set full --import-source no --kernel-name-base demangled -k "regex:k_attn_one" \
  --launch-skip 3 --launch-count 1 -o $R/rep $B/bench_kernels --attn-only --batch 1 > $R/ncu.txt 2>&1
echo "ncu rc=$?"
ncu -i $R/rep.ncu-rep --page source --csv --print-source sass | gzip > $R/src.csv.gz
ncu -i $R/rep.ncu-rep --page details > $R/details.txt 2>&1
ncu -i $R/rep.ncu-rep --page raw --csv 2>/dev/null | gzip > $R/raw.csv.gz
grep -E "Duration|Grid Size|Block Size|Cluster|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Achieved Occupancy|DRAM Throughput|L2 Hit" $R/details.txt | head -20
python3 bench/ncu_stalls.py $R/src.csv.gz 30 | head -50
rm -f $R/rep.ncu-rep
call_end

#!/bin/sh
# s31's first call, on wip/norm-rope-smem (rebased on 92aabff) with BASE = a build-gpu of 92aabff:
# 1. the suite (memchecks; logits against the base byte for byte: the same operations on the same values);
# 2. k_norm_rope alone under ncu new / base at batch 1 (8 Flash layers, 2 decode steps: 16 calls a step);
# 3. decode at batch 1 / 2 / 16 against the base, 3 rounds;
# 4. s30's prepared stalls/run.sh body: where k_moe16's decode warps wait at 1 token (ncu source page by SASS
#    instruction of the reference gate / up and down kernels, bench/ncu_stalls.py).
# BASE=/tmp/base92 sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r1
sh scripts/gpu_verify.sh
model=$(mktemp -d)/flash
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$model" > /dev/null 2>&1
for v in new base; do
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  timeout 120 ncu --clock-control none -k regex:^k_norm_rope --metrics gpu__time_duration.sum $c -m "$model" \
    --prompt 16 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/ncu-nr-$v.txt 2>&1
  echo "k_norm_rope $v: $(grep gpu__time_duration $R/ncu-nr-$v.txt | awk '{print $NF}' | tail -16 | tr '\n' ' ')"
done
for k in gu:false dn:true; do
  tag=${k%%:*} down=${k#*:}
  timeout 150 ncu --set full --import-source no --kernel-name-base demangled -k "regex:k_moe16<4, 1, $down, 1, 1, 8>" \
    --launch-skip 3 --launch-count 1 -o $R/rep-$tag $B/bench_kernels --experts-only --batch 1 > $R/ncu-$tag.txt 2>&1
  echo "ncu $tag rc=$?"
  ncu -i $R/rep-$tag.ncu-rep --page source --csv --print-source sass | gzip > $R/src-$tag.csv.gz
  ncu -i $R/rep-$tag.ncu-rep --page details > $R/details-$tag.txt 2>&1
  grep -E "Duration|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Achieved Occupancy|DRAM Throughput" $R/details-$tag.txt | head -12
  python3 bench/ncu_stalls.py $R/src-$tag.csv.gz 25 | head -40
  rm -f $R/rep-$tag.ncu-rep
done
AB_REPEAT=3 AB_DECODE=32 timeout 240 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
cat $R/ab.txt
call_end

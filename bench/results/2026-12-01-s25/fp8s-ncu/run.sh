#!/bin/sh
# call 2: k_mma_fp8s in decode steps at batch 1 (no graphs), the working tree's (fp8s-pp's two register sets)
# against d6420fe's (*.base): ncu's kernel durations (clocks not locked) over 16 launches each, then the
# warp-state and source-level stall sampling of one launch of each (the SASS with its samples, as CSV).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 1 --decode 4 --batch 1 --no-graphs"
for v in new base; do
  bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread \
    -k regex:'^k_mma_fp8s$' --launch-skip 8 --launch-count 16 $bin $BC > $R/dur-$v.txt 2>&1
  echo "== $v"; grep -E "k_mma_fp8s|gpu__time_duration|grid_size" $R/dur-$v.txt | paste - - - | awk '{print $(NF-8), $NF}' | head -20
  grep -E "gpu__time_duration" $R/dur-$v.txt | awk '{s+=$NF; n++} END {print "mean us", s/n, "n", n}'
  timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters --section SchedulerStats \
    --section SpeedOfLight -k regex:'^k_mma_fp8s$' --launch-skip 12 --launch-count 1 -o $R/rep-$v $bin $BC > $R/prof-$v.log 2>&1
  ncu -i $R/rep-$v.ncu-rep --page details > $R/det-$v.txt 2>&1
  ncu -i $R/rep-$v.ncu-rep --page source --csv --print-source sass > $R/src-$v.csv 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Issued Warp|Eligible Warps|Active Warps|DRAM Throughput" $R/det-$v.txt
  gzip -f $R/src-$v.csv
done
rm -f $R/*.ncu-rep
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

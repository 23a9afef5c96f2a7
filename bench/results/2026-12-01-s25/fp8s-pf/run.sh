#!/bin/sh
# call 3: k_mma_fp8s at batch 1 (wo_a, 8 groups x 1024 x 4096 FP8), probe knobs on the working tree
# (fp8s-pf.diff): DSV4_MS_PF=1 prefetches a step's activation fragments into L1 two steps ahead
# (prefetch.global.L1), DSV4_MS_P=8 takes eight K parts (U = 2,048 units, up to 10 warps an SM) instead
# of four; against d6420fe (*.base). ncu kernel durations (clocks not locked, 16 launches) per variant, the
# stall sampling of one launch with the prefetch, then decode at batch 1 alternating (3 rounds).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 1 --decode 4 --batch 1 --no-graphs"
for v in new pf p8 pfp8 base; do
  bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
  e=""; case $v in pf) e="DSV4_MS_PF=1";; p8) e="DSV4_MS_P=8";; pfp8) e="DSV4_MS_PF=1 DSV4_MS_P=8";; esac
  timeout 120 env $e ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size \
    -k regex:'^k_mma_fp8s$' --launch-skip 8 --launch-count 16 $bin $BC > $R/dur-$v.txt 2>&1
  echo "== $v: $(grep -E "gpu__time_duration" $R/dur-$v.txt | awk '{s+=$NF; n++} END {print "mean us", s/n, "n", n}') grid $(grep -m1 launch__grid_size $R/dur-$v.txt | awk '{print $NF}')"
done
timeout 150 env DSV4_MS_PF=1 ncu --clock-control none --section WarpStateStats --section SourceCounters --section SchedulerStats \
  --section SpeedOfLight -k regex:'^k_mma_fp8s$' --launch-skip 12 --launch-count 1 -o $R/rep-pf $B/bench_cpu $BC > $R/prof-pf.log 2>&1
ncu -i $R/rep-pf.ncu-rep --page details > $R/det-pf.txt 2>&1
ncu -i $R/rep-pf.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > $R/src-pf.csv.gz
rm -f $R/*.ncu-rep
OUT_SAVE=$OUT; export OUT=$R
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;pf=env DSV4_MS_PF=1 $B/bench_cpu;pfp8=env DSV4_MS_PF=1 DSV4_MS_P=8 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 240 sh scripts/gpu_ab.sh "b1:--batch 1"
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

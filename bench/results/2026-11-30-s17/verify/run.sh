#!/bin/sh
# call 1: 874ac0c (DSV4_WG8_N64 a cuda_knob; k_wgbf / k_wgf8 ring helpers) on the GPU: the suite (tests, quick
# memchecks), prefill 4k and decode batch 1 / 16 / 64 timings, and ncu's per-kernel table of a batch-16 step
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 345 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -60
OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2; do
  timeout 40 $B/bench_cpu $BC --prompt 4096 --decode 2 > $R/pf-$i.txt 2>&1; echo "pf-$i: $(grep -m1 '^model' $R/pf-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
  for b in 1 16 64; do
    timeout 40 $B/bench_cpu $BC --prompt 16 --decode 32 --batch $b > $R/d$b-$i.txt 2>&1; echo "d$b-$i: $(grep -m1 '^model ' $R/d$b-$i.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
  done
done
timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $B/bench_cpu $BC --prompt 1 --decode 2 --batch 16 --no-graphs > $R/ncu16.txt 2>&1
python3 bench/ncu_kernel_table.py --steps 3 $R/ncu16.txt > $R/ncu16-table.txt 2>&1; head -30 $R/ncu16-table.txt
gzip -f $R/ncu16.txt $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

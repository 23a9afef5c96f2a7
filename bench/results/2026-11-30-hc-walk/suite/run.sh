#!/bin/sh
# session 16 call 1 (at 253b76e, the grp_fma fix): the GPU suite, then per-kernel ncu summaries
# (decode batch 16, prefill 1024) and bench_cpu profiles of decode b1/b16
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 330 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -60
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="$B/bench_cpu -m /tmp/f8 --backend cuda --fill-random --numerics reference"
timeout 60 $BC --prompt 16 --decode 16 --batch 16 --profile $R/p16.json > $R/p16.txt 2>&1
timeout 60 $BC --prompt 16 --decode 16 --batch 1 --profile $R/p1.json > $R/p1.txt 2>&1
grep -A13 "^decode:" $R/p16.txt $R/p1.txt
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $BC --prompt 1 --decode 2 --batch 16 --no-graphs > $R/ncu16.txt 2>&1
timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $BC --prompt 1024 --decode 1 --batch 1 --no-graphs > $R/ncupf.txt 2>&1
python3 bench/ncu_kernel_table.py --steps 3 $R/ncu16.txt | head -40
python3 bench/ncu_kernel_table.py $R/ncupf.txt | head -40
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 1: 7947823 (the pack helper, pack_at_of) on the GPU: the suite (tests, quick memchecks), decode batch
# 1 / 8 / 16 / 64 timings, then dsv4 serve on 8 Flash layers driven by dsv4 bench at concurrency 1 / 8 / 16 / 64
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
t0=$(date +%s)
TIMINGS=0 SANITIZE=quick timeout 320 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$? $(( $(date +%s) - t0 )) s" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -60
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for b in 1 8 16 64; do
  timeout 40 $B/bench_cpu $BC --prompt 16 --decode 32 --batch $b > $R/d$b.txt 2>&1; echo "d$b: $(grep -m1 '^model ' $R/d$b.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
done
t1=$(date +%s)
TESTS=0 SANITIZE=0 KERNELS=0 FIXTURES=0 SERVE_FLASH=1 SERVE_LAYERS=8 timeout 220 sh scripts/gpu_suite.sh > $R/serve.txt 2>&1; echo "serve rc=$? $(( $(date +%s) - t1 )) s" | tee -a $R/serve.txt
tail -20 $R/serve.txt
OUT=$OUT_SAVE
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

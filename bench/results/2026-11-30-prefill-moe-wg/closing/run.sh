#!/bin/sh
# closing call: the GPU suite (tests, quick memchecks) at the head, then decode and prefill timings against
# the base (9afecb3: its experts kernel with one warpgroup a block, DSV4_MOE_WGS=1), alternating
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r11; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 470 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -60
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1; bin=$2; shift 2
  DSV4_MOE_WGS=1 timeout 60 $B/$bin -m /tmp/f8 --backend cuda --fill-random --numerics reference "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for b in 1 16 64; do run d$b-new bench_cpu --prompt 16 --decode 16 --batch $b; run d$b-base bench_cpu.base --prompt 16 --decode 16 --batch $b; done
run pf-new bench_cpu --prompt 4096 --decode 2; run pf-base bench_cpu.base --prompt 4096 --decode 2
run pf-profile bench_cpu --prompt 4096 --decode 2 --profile F
grep -A12 "^prefill:" $R/pf-profile.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 2: k_moe16 with MXFP4's E8M0 scales decoded once a row for the warp (v1: a table in shared memory) and
# v2 (= the tree: v1 + reference decode's loop over the ring's three stages as constants, <= 128 registers):
# the GPU suite of v2 (tests, quick memchecks) plus racecheck on q_stock and q_mma reference, then
# bench_kernels --experts-only and decode steps at batch 1 / 16 / 64 of base (7947823), v1 and v2, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
mkdir -p $B/v1 && tar xJf $B/v1.tar.xz -C $B/v1
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for f in q_stock q_mma; do
  timeout 100 compute-sanitizer --tool racecheck $B/bench_cpu -m tests/fixtures/$f --prompt 40 --decode 6 --batch 3 --backend cuda > $R/racecheck-$f.txt 2>&1; echo "racecheck $f: $(grep -m1 'SUMMARY' $R/racecheck-$f.txt) exit $?"
done
for i in 1 2; do for v in base v1 v2; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base; [ $v = v1 ] && K=$B/v1/bench_kernels
  timeout 100 $K --experts-only --batch 1,16,64 > $R/bk-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "^experts" $R/bk-$v-$i.txt
done; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16 64; do
  run b$b-v2-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b; run b$b-v1-$i $B/v1/bench_cpu $b
done; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

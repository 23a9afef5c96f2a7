#!/bin/sh
# call 6: k_moe16 as committed (swizzled 64-byte stage rows and the group scales a group ahead where B is in
# the ring - reference numerics' decode; the warps' sums through the rings everywhere): the GPU suite (tests,
# quick memchecks) plus racecheck on q_mma reference, then against the base build 874ac0c (*.base) in the same
# call: bench_kernels' experts at batch 1 / 16 / 64 and decode steps at batch 1 / 8 / 16 / 64, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 330 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
timeout 100 compute-sanitizer --tool racecheck $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda > $R/racecheck.txt 2>&1; echo "racecheck q_mma: $(grep -m1 'ERROR SUMMARY' $R/racecheck.txt) exit $?"
for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 150 $K --batch 1,16,64 > $R/bk-$v.txt 2>&1
  echo "== $v"; grep -E "^experts" $R/bk-$v.txt
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 8 16 64; do
  run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b
done; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

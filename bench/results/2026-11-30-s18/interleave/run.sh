#!/bin/sh
# call 5: the tree - k_moe16's K parts interleaved (every fourth group a warp), its weight copies with
# .L2::256B, its grid's row blocks along x; k_moe_wg walking the same parts part by part (the same bits):
# the GPU suite (tests, quick memchecks) plus racecheck on q_stock and q_mma reference, then against
# e0a1aa9 (*.base) in the same call: bench_kernels --experts-only, decode steps at batch 1 / 8 / 16 / 64 and
# a 4,096-token prefill, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for f in q_stock q_mma; do
  timeout 100 compute-sanitizer --tool racecheck $B/bench_cpu -m tests/fixtures/$f --prompt 40 --decode 6 --batch 3 --backend cuda > $R/racecheck-$f.txt 2>&1; echo "racecheck $f: $(grep -m1 'SUMMARY' $R/racecheck-$f.txt) exit $?"
done
for i in 1 2; do for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 100 $K --experts-only --batch 1,16,64 > $R/bk-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "^experts" $R/bk-$v-$i.txt
done; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for v in new base; do
    C=$B/bench_cpu; [ $v = base ] && C=$B/bench_cpu.base
    timeout 60 $C $BC --prompt 4096 --decode 2 > $R/pf-$v-$i.txt 2>&1; echo "pf-$v-$i: $(grep -m1 '^model' $R/pf-$v-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
  done
  for b in 1 8 16 64; do run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b; done
done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

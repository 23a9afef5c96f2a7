#!/bin/sh
# call 9: k_wg8's parts along K of at least 8 groups (wip/wg8-parts8: wq_a, wkv and the shared expert's w1 / w3
# 4 parts instead of 8, its w2 2 instead of 4, the indexer's wq_b 1 instead of 4 - one launch with wq_b; wq_b and
# wo_b as before; other sums for those linears), against 025ca55 (*.base): decode new / base alternating at
# batch 1 / 16, the linears of both builds at batch 1, the suite (GPU-vs-CPU tolerances; the bits differ).
# (As first run, the suite did not start - the script had changed directory; SUITE_ONLY=1 ran it in a second call.)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r9; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 b=$3
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  timeout 40 $c -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
if [ "${SUITE_ONLY:-0}" = 0 ]; then
for i in 1 2; do for b in 1 16; do for v in new base; do run b$b-$v-$i $v $b; done; done; done
for v in bench_kernels bench_kernels.base; do
  timeout 40 $B/$v --linear-only --batch 1 > $R/lin-$v.txt 2>&1; echo "== $v"; grep -E "\(FP8\)" $R/lin-$v.txt | cut -c1-92
done
(cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start))
fi
[ -x $B/dsv4.base ] && mv $B/dsv4.base $B/dsv4.base.off # no bits check against the base: these sums differ by design
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=0 timeout 150 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|suite rc" $R/suite.txt | head -30
OUT=$OUT_SAVE
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

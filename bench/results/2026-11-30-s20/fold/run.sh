#!/bin/sh
# call 3: two launches a layer folded (this build against 7be40f8, *.base): the rounding of z to BF16 in front
# of wo_b left to wo_b's act_quant (which now reads x as BF16 values), and the router in the experts' plan
# launch (be->moe_routes; DSV4_MOE_ROUTES=0 gives its own launch back: "noroute" below, the z fold alone).
# The suite (logits against the base byte for byte, tests with the new fused-route check, quick memchecks),
# then decode at batch 16 / 1 / 64 (reference) and 16 (plain), new / noroute / base alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 num=$3 b=$4
  case $v in new) c="$B/bench_cpu";; noroute) c="env DSV4_MOE_ROUTES=0 $B/bench_cpu";; base) c="$B/bench_cpu.base";; esac
  timeout 40 $c -m /tmp/f8 --backend cuda --fill-random --numerics $num --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for b in 16 1 64; do for v in new noroute base; do run b$b-$v-$i $v reference $b; done; done
done
for i in 1 2; do for v in new base; do run p16-$v-$i $v plain 16; done; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

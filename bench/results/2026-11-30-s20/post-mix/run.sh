#!/bin/sh
# call 6: hc_post told the hc_pre after it (its next) makes that hc_pre's mixing products in its own kernel
# (k_hc_post_mix: the new X of 256 columns of every stream, then k_hc_mix's sums over them; the next hc_pre
# skips k_hc_mix): one launch less per sublayer boundary, 15 a step. This build against the same binary with
# DSV4_HC_POST_MIX=0 ("nomix": 471cf99's launches); the suite first (logits against 7be40f8, *.base, byte for
# byte; test_ops_cuda's new told-or-not cases; quick memchecks), then decode at batch 1 / 16 / 64
# (reference), three rounds alternating, and plain 16
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
grep -E "FAIL|differs" $R/ops_cuda*.txt 2>/dev/null | head -5
OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 num=$3 b=$4
  case $v in new) c="$B/bench_cpu";; nomix) c="env DSV4_HC_POST_MIX=0 $B/bench_cpu";; esac
  timeout 40 $c -m /tmp/f8 --backend cuda --fill-random --numerics $num --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2 3; do
  for b in 1 16 64; do for v in new nomix; do run b$b-$v-$i $v reference $b; done; done
done
for i in 1 2; do for v in new nomix; do run p16-$v-$i $v plain 16; done; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

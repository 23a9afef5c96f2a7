#!/bin/sh
# call 5: the attention's projections of h other than wq_a (wkv, the compressors' and the indexer's weights) on
# the second queue at the head of the KV path, so the Q path waits for wq_a alone (this build: hc-side/'s change
# + this), against hc-side/'s build ("hcs", .gpu/var.tar.xz) and 7be40f8 (*.base). The suite (logits against
# the base byte for byte, tests, quick memchecks), then decode at batch 1 / 16 / 64 (reference), three rounds
# alternating, and plain 16
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
mkdir -p /tmp/var && tar xJf .gpu/var.tar.xz -C /tmp/var
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 num=$3 b=$4
  case $v in new) c="$B/bench_cpu";; hcs) c="/tmp/var/vhcs/bench_cpu";; base) c="$B/bench_cpu.base";; esac
  timeout 40 $c -m /tmp/f8 --backend cuda --fill-random --numerics $num --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2 3; do
  for b in 1 16 64; do for v in new hcs base; do run b$b-$v-$i $v reference $b; done; done
done
for i in 1 2; do for v in new hcs; do run p16-$v-$i $v plain 16; done; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 3: the weighted sum's walking block at 32 / 64 / 128 dimensions: tests, dsv4 tune, 4k prefill per choice
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -2 $R/ops.txt; grep -E "FAIL|fail" $R/ops.txt | grep -v harness | head -20
timeout 200 $B/dsv4 tune -o $R/tune.json > $R/tune.txt 2>&1; echo "tune rc=$?"; cat $R/tune.txt | tail -30
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1; w=$2; shift 2
  DSV4_TUNE=$B/tune-walk$w.json timeout 60 $B/bench_cpu $BC "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for w in 32 64 128; do run pf-w$w-$i $w --prompt 4096 --decode 2; done; done
for w in 32 64 128; do run pf-w$w-prof $w --prompt 4096 --decode 2 --profile F; grep -E "attention" $R/pf-w$w-prof.txt; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

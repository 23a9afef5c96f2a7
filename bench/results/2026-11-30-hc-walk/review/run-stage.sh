#!/bin/sh
# call 9: k_hc_mix's two staging loops one helper (hc_stage): test_ops_cuda and a 4k prefill
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r9; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -n1 $R/ops.txt; grep -E "FAIL|fail" $R/ops.txt | grep -v harness | head
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
timeout 40 $B/bench_cpu -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 4096 --decode 2 > $R/pf.txt 2>&1; grep -m1 "^model" $R/pf.txt | sed 's/.*prefill //; s/ (graphs.*//' | tee $R/summary.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

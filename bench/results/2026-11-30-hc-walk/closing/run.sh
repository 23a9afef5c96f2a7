#!/bin/sh
# call 5: k_wg8's 64-token tiles only where a launch keeps three blocks an SM; tests; the linears at
# 1,024 / 4,096 tokens (DSV4_WG8_N64=0 beside); decode b1/b16/b64 and a 4k prefill against the base
# (253b76e, the session's first commit: bench_cpu.base), alternating
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
( $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?" >> $R/ops.txt ) ; tail -1 $R/ops.txt; grep -E "FAIL|fail" $R/ops.txt | grep -v harness | head -20
( DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 $B/test_ops_cuda > $R/ops-pf.txt 2>&1; echo "ops forced exit $?" >> $R/ops-pf.txt ) ; tail -1 $R/ops-pf.txt
for v in 1 0; do DSV4_WG8_N64=$v timeout 120 $B/bench_kernels --linear-only --batch 1024,4096 > $R/lin-n64-$v.txt 2>&1; done
grep -iE "FP8" $R/lin-n64-1.txt | head -16; echo ---; grep -iE "FP8" $R/lin-n64-0.txt | head -16
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1; bin=$2; shift 2
  timeout 60 $B/$bin $BC "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16 64; do run d$b-new$i bench_cpu --prompt 16 --decode 32 --batch $b; run d$b-base$i bench_cpu.base --prompt 16 --decode 32 --batch $b; done; done
for i in 1 2; do run pf-new$i bench_cpu --prompt 4096 --decode 2; run pf-base$i bench_cpu.base --prompt 4096 --decode 2; done
run pf-profile bench_cpu --prompt 4096 --decode 2 --profile F; grep -A12 "^prefill:" $R/pf-profile.txt
run d16-profile bench_cpu --prompt 16 --decode 16 --batch 16 --profile F; grep -A12 "^decode:" $R/d16-profile.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

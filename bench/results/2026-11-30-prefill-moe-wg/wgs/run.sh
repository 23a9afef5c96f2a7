#!/bin/sh
# k_moe_wg: one or two warpgroups a block; decode against the base, alternating
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
DSV4_MOE_WGS=1 timeout 300 $B/test_ops_cuda > $R/ops_cuda_wgs1.txt 2>&1; echo "ops_cuda WGS=1 rc=$?" | tee $R/tests.txt
grep -E "wgmma|FAIL|PASSED|FAILED" $R/ops_cuda_wgs1.txt | cut -c1-150 | head -12
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
pf() { n=$1; bin=$2; shift 2
  env "$@" timeout 150 $B/$bin -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do pf pf-wgs2-$i bench_cpu DSV4_MOE_WGS=2; pf pf-wgs1-$i bench_cpu DSV4_MOE_WGS=1; pf pf-base-$i bench_cpu.base X=1; done
dec() { n=$1; bin=$2; shift 2
  timeout 100 $B/$bin -m /tmp/f8 --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode 16 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16; do dec d$b-new-$i bench_cpu --batch $b; dec d$b-base-$i bench_cpu.base --batch $b; done; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

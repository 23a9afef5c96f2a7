#!/bin/sh
# k_moe_wg with fewer instructions a group: tests, bits, prefill against the base
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 300 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops_cuda rc=$?" | tee $R/tests.txt
DSV4_MOE_WGS=1 timeout 300 $B/test_ops_cuda > $R/ops_cuda_wgs1.txt 2>&1; echo "ops_cuda WGS=1 rc=$?" | tee -a $R/tests.txt
grep -E "FAIL|PASSED|FAILED" $R/ops_cuda.txt $R/ops_cuda_wgs1.txt | cut -c1-150 | head -12
OUT_SAVE=$OUT; OUT=$R DSV4_MOE_WG=1 sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
pf() { n=$1; bin=$2; shift 2
  env "$@" timeout 150 $B/$bin -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics ${NUM:-reference} > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do pf pf-wgs2-$i bench_cpu DSV4_MOE_WGS=2; pf pf-wgs1-$i bench_cpu DSV4_MOE_WGS=1; pf pf-base-$i bench_cpu.base X=1; done
NUM=plain; pf pf-plain-new bench_cpu X=1; pf pf-plain-base bench_cpu.base X=1; NUM=reference
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# k_wgbf with the parts as a cluster for small shapes: tests, bits, kernels (against DSV4_WGBF=0), prefill against the base
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 300 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops_cuda rc=$?" | tee $R/tests.txt
grep -E "FAIL|PASSED|FAILED" $R/ops_cuda.txt | cut -c1-160 | head -12
OUT_SAVE=$OUT; OUT=$R DSV4_MOE_WG=1 DSV4_WGBF=1 sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
for v in x 0; do
  DSV4_WGBF=$v timeout 200 $B/bench_kernels --linear-only --batch 1024,4096 --reps 10 > $R/gemm-wgbf$v.txt 2>&1
  grep -E "BF16" $R/gemm-wgbf$v.txt | grep -v "lm head" | cut -c1-62 | sed "s/^/wgbf=$v /"
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
pf() { n=$1; bin=$2; shift 2
  env "$@" timeout 150 $B/$bin -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics reference > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do pf pf-new-$i bench_cpu X=1; pf pf-base-$i bench_cpu.base DSV4_MOE_WGS=1; done
timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics reference --profile F > $R/profile-pf4k.txt 2>&1
grep -A12 "^prefill:" $R/profile-pf4k.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

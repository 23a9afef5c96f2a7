#!/bin/sh
# k_wgf8 (FP8 with unquantised activations at prefill on wgmma) and k_wgbf's cluster threshold: tests, bits,
# kernels against DSV4_WGF8=0 / DSV4_WGBF=0, prefill against the base
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r9; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 300 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops_cuda rc=$?" | tee $R/tests.txt
grep -E "FAIL|PASSED|FAILED|fail" $R/ops_cuda.txt | cut -c1-160 | head -12
OUT_SAVE=$OUT; OUT=$R DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
for v in x 0; do
  DSV4_WGF8=$v DSV4_WGBF=$v timeout 200 $B/bench_kernels --linear-only --batch 1024,4096 --reps 10 > $R/gemm-$v.txt 2>&1
  grep -E "wo_a|wq_b|BF16" $R/gemm-$v.txt | grep -v "lm head" | cut -c1-62 | sed "s/^/wg=$v /"
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
pf() { n=$1; bin=$2; num=$3; shift 3
  env "$@" timeout 150 $B/$bin -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics $num > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do pf pf-new-$i bench_cpu reference X=1; pf pf-base-$i bench_cpu.base reference DSV4_MOE_WGS=1; done
pf pf-plain-new bench_cpu plain X=1; pf pf-plain-base bench_cpu.base plain X=1
timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics reference --profile F > $R/profile-pf4k.txt 2>&1
grep -A12 "^prefill:" $R/profile-pf4k.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

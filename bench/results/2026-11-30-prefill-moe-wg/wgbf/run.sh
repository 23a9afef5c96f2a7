#!/bin/sh
# k_wgbf (BF16 linears at prefill on wgmma): tests, bits, kernels, prefill against the base (k_moe_wg, one warpgroup)
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 300 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops_cuda rc=$?" | tee $R/tests.txt
grep -E "FAIL|fail|PASSED|FAILED" $R/ops_cuda.txt | cut -c1-160 | head -12
grep -E "linear BF16 n=(200|130|160|150|13 |7 |70 )" $R/ops_cuda.txt | cut -c1-160 | head
OUT_SAVE=$OUT; OUT=$R DSV4_MOE_WG=1 DSV4_WGBF=1 sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
timeout 200 $B/bench_kernels --linear-only --batch 1024,4096 --reps 10 > $R/gemm.txt 2>&1
timeout 200 $B/bench_kernels.base --linear-only --batch 1024,4096 --reps 10 > $R/gemm-base.txt 2>&1
grep -E "gate" $R/gemm.txt $R/gemm-base.txt | cut -c1-200
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
pf() { n=$1; bin=$2; shift 2
  env "$@" timeout 150 $B/$bin -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics reference > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do pf pf-new-$i bench_cpu X=1; pf pf-base-$i bench_cpu.base DSV4_MOE_WGS=1; done
timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics reference --profile F > $R/profile-pf4k.txt 2>&1
grep -A12 "^prefill:" $R/profile-pf4k.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

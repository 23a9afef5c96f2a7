#!/bin/sh
# after the review's refactors (shared chain/epilogue helpers, wgmma wrappers in rowdot.cuh, one host launcher,
# the attributes at init): tests, logits with the prefill kernels forced, prefill against 6f4326d's build
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r13; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 100 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops_cuda rc=$?" | tee $R/tests.txt
DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 timeout 100 $B/test_ops_cuda > $R/ops_cuda_prefill.txt 2>&1; echo "ops_cuda prefill kernels forced rc=$?" | tee -a $R/tests.txt
grep -E "FAIL|PASSED|FAILED" $R/ops_cuda.txt $R/ops_cuda_prefill.txt | cut -c1-160 | head
OUT_SAVE=$OUT; OUT=$R DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
for bin in bench_cpu bench_cpu.base; do
  timeout 40 $B/$bin -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics reference > $R/pf-$bin.txt 2>&1
  echo "$bin: $(grep -m1 '^model ' $R/pf-$bin.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

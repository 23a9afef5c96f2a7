#!/bin/sh
# refactor check (wg8 dispatch in linear.cu, jobs once per call) + DSV4_WG8_BPS experiment
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r; mkdir -p $R
timeout 300 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "exit $?" >> $R/ops.txt
echo "ops wg8: $(grep -cE 'FAIL' $R/ops.txt) fails; $(grep -E 'PASSED|exit' $R/ops.txt | tr '\n' ' ')"
grep -E "FAIL" $R/ops.txt | head -20
DSV4_WG8=0 timeout 300 $B/test_ops_cuda > $R/ops0.txt 2>&1; echo "exit $?" >> $R/ops0.txt
echo "ops f16: $(grep -E 'PASSED|exit' $R/ops0.txt | tr '\n' ' ')"; grep FAIL $R/ops0.txt | head
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?"; grep -E "PASSED|FAIL" $R/golden.txt | head
for bps in 4 2 8 4; do
  DSV4_WG8_BPS=$bps timeout 100 $B/bench_kernels --linear-only --batch 1,8,16 > $R/k-bps$bps.txt 2>&1
  echo "== BPS $bps"; grep -E "FP8" $R/k-bps$bps.txt | cut -c1-100
done
tar czf $OUT/r.tgz -C $R .

#!/bin/sh
# where the second op pass's NaN-for-Inf comes from (case 67: FP8 n=3 act_quant NaN/Inf): reference numerics
# on mma.cu, with and without the streamed decode kernel
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r12; rm -rf $R; mkdir -p $R; touch $R/.start
for v in "DSV4_WG8=0" "DSV4_WG8=0 DSV4_MMA_STREAM=2" "DSV4_WG8=0 DSV4_MMA_STREAM=2 DSV4_MMA_GPW=3"; do
  f=$R/ops-$(echo $v | tr ' =' '_-').txt
  env $v timeout 120 $B/test_ops_cuda > $f 2>&1
  echo "$v: $(grep -cE '^  FAIL' $f) failures; $(grep -E 'n=3 out=70 in=512|n=12 out=70 in=512' $f | grep -c FAILED) of the NaN/Inf decode cases"
  grep -E '^  FAIL' $f | cut -c1-200 | head -3
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

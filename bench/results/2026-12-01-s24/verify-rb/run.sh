#!/bin/sh
# call 5: the committed threshold (two row blocks a block where that leaves 16 waves or more: batch 64, not
# 8 / 16): test_ops_cuda as built, and with DSV4_MOE_RB=2; bench_kernels --experts-only at batch 1 / 8 / 16
# / 64 (auto, then DSV4_MOE_RB=1, twice); decode at batch 16 / 64 (auto against DSV4_MOE_RB=1, twice)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "FAIL|PASSED" $R/ops.txt
DSV4_MOE_RB=2 timeout 200 $B/test_ops_cuda > $R/ops-rb2.txt 2>&1; echo "ops rb2 exit $?"; grep -E "FAIL|PASSED" $R/ops-rb2.txt
for i in 1 2; do for v in 0 1; do
  DSV4_MOE_RB=$v timeout 60 $B/bench_kernels --experts-only --batch 1,8,16,64 > $R/moe-rb$v-$i.txt 2>&1
  echo "== rb$v run $i"; grep -E "^experts \(ref\.\) |^experts \(MXFP4\) " $R/moe-rb$v-$i.txt | cut -c1-90
done; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2; do for b in 16 64; do for v in 0 1; do
  DSV4_MOE_RB=$v timeout 60 $B/bench_cpu $BC --prompt 16 --decode 32 --batch $b > $R/rb$v-b$b-$i.txt 2>&1
  echo "rb$v-b$b-$i: $(grep -m1 '^model ' $R/rb$v-b$b-$i.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
done; done; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

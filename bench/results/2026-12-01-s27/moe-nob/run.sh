#!/bin/sh
# s27 call 8: wip/moe-nob5 — DSV4_MOE_NOB=1 runs k_moe16 with one activation plane (reference numerics' decode)
# with B from L2 instead of the ring (36 KB a block) at five blocks an SM (__launch_bounds__ min 5: 92
# registers, no spill), against the default (51 KB, four blocks). test_ops_cuda with it, the logits with it
# against main's build, the experts alone at batch 1 / 8 / 16 with / without, decode at batch 1 / 16 (3 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
DSV4_MOE_NOB=1 timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt; grep -E "FAIL|PASSED|exit" $R/ops_cuda.txt
DSV4_MOE_NOB=1 sh scripts/gpu_bits.sh
for v in nob ring; do
  e=; [ $v = nob ] && e="env DSV4_MOE_NOB=1"
  timeout 60 $e $B/bench_kernels --experts-only --batch 1,8,16 > $R/experts-$v.txt 2>&1
  echo "== $v"; grep -E "^experts" $R/experts-$v.txt | head -12
done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="nob=env DSV4_MOE_NOB=1 $B/bench_cpu;ring=$B/bench_cpu" timeout 150 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
cat $R/ab.txt
gzip -9 -n $R/ops_cuda.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

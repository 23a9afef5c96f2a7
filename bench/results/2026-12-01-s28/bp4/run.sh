#!/bin/sh
# wip/moe-bp4: the routed experts' tiles of 4 pairs (DSV4_MOE_BP4=1: 3.3 KB ring stages, four a warp) where the
# tiles of 2 pairs lose (16 tokens and up: an expert with more than 2 pairs reads its weights once a tile).
# scripts/gpu_verify.sh (the suite with memchecks, test_ops_cuda checking tiles of 8 / 2 / 4 pairs bit for bit;
# logits against 709921c's), the experts alone at 8-64 tokens by default and with DSV4_MOE_BP4=1, decode at
# batch 16 / 32 the same two ways (2 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
sh scripts/gpu_verify.sh
for v in auto bp4; do
  e=; [ $v = bp4 ] && e=DSV4_MOE_BP4=1
  env $e timeout 60 $B/bench_kernels --experts-only --batch 8,12,16,24,32,48,64 > $R/experts-$v.txt 2>&1
  echo "== $v"; grep -E "^experts \(ref\.\)" $R/experts-$v.txt
done
AB_REPEAT=2 AB_DECODE=32 AB_BINS="bp4=env DSV4_MOE_BP4=1 $B/bench_cpu;auto=$B/bench_cpu" timeout 150 \
  sh scripts/gpu_ab.sh "b16:--batch 16" "b32:--batch 32"
cat $R/ab.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

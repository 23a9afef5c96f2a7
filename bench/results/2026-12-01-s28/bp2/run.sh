#!/bin/sh
# wip/moe-bp with its tiles of 2 pairs by default at 4-12 tokens (MXFP4): scripts/gpu_verify.sh (the suite with
# memchecks; logits against main's before the launch-bounds fix, byte for byte), the experts alone at 1-16
# tokens with the default, DSV4_MOE_BP=0 (moe16_nob at 4-12, as before) and DSV4_MOE_BP=0 DSV4_MOE_NOB=0 (the
# three-stage ring everywhere), then decode at batch 4 / 12: the default against DSV4_MOE_BP=0 (3 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
sh scripts/gpu_verify.sh
for r in 1 2; do
  for v in bp nob ring; do
    case $v in bp) e="";; nob) e="DSV4_MOE_BP=0";; ring) e="DSV4_MOE_BP=0 DSV4_MOE_NOB=0";; esac
    env $e timeout 60 $B/bench_kernels --experts-only --batch 1,2,3,4,6,8,12,16 > $R/experts-$v-$r.txt 2>&1
    echo "== $v ($r)"; grep -E "^experts \(ref\.\)" $R/experts-$v-$r.txt
  done
done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="bp=$B/bench_cpu;nob=env DSV4_MOE_BP=0 $B/bench_cpu" timeout 200 \
  sh scripts/gpu_ab.sh "b4:--batch 4" "b12:--batch 12"
cat $R/ab.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

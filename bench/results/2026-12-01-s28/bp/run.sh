#!/bin/sh
# Two changes on wip/moe-bp against main before them (BASE: 709921c): k_moe16's launch bounds without the
# explicit minimum of 1 block an SM (120 registers again instead of 130: four blocks an SM) and the routed
# experts' tiles of at most 2 pairs with four ring stages (DSV4_MOE_BP; default in reference numerics up to 16
# tokens). scripts/gpu_verify.sh (the suite with memchecks; logits against the base's, byte for byte), the
# experts alone (base; the new build with DSV4_MOE_BP=0, i.e. the launch-bounds fix alone; the new default),
# decode at batch 1 / 8 / 16 in the same three ways (3 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
sh scripts/gpu_verify.sh
for r in 1 2; do
  for v in base fix bp; do
    case $v in base) c="$B/bench_kernels.base";; fix) c="env DSV4_MOE_BP=0 $B/bench_kernels";; bp) c="$B/bench_kernels";; esac
    timeout 60 $c --experts-only --batch 1,2,4,8,16,32 > $R/experts-$v-$r.txt 2>&1
    echo "== $v ($r)"; grep -E "^experts \(ref\.\)" $R/experts-$v-$r.txt
  done
done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="bp=$B/bench_cpu;fix=env DSV4_MOE_BP=0 $B/bench_cpu;base=$B/bench_cpu.base" timeout 330 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
cat $R/ab.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

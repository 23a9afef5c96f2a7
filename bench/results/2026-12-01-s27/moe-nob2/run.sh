#!/bin/sh
# s27 call 9: call 8's DSV4_MOE_NOB=1 (k_moe16, one activation plane: B from L2 at five blocks an SM) where it
# gained alone (batch 8: 5 %): the experts alone at batch 1-32 with / without, decode at batch 4 / 8 / 12
# with / without (4 rounds, alternating)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r9; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
for v in nob ring nob2 ring2; do
  e=; case $v in nob*) e="env DSV4_MOE_NOB=1" ;; esac
  timeout 60 $e $B/bench_kernels --experts-only --batch 2,4,8,12,16,24,32 > $R/experts-$v.txt 2>&1
  echo "== $v"; grep -E "^experts \(ref\.\) " $R/experts-$v.txt | awk '{print $3, $5}' | tr '\n' ' '; echo
done
AB_REPEAT=4 AB_DECODE=32 AB_BINS="nob=env DSV4_MOE_NOB=1 $B/bench_cpu;ring=$B/bench_cpu" timeout 300 \
  sh scripts/gpu_ab.sh "b4:--batch 4" "b8:--batch 8" "b12:--batch 12"
cat $R/ab.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

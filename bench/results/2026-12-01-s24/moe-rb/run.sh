#!/bin/sh
# call 2: k_moe16 with two row blocks a block (RB = 2) where one a block makes more than one wave and two make
# one (batch 1 on Flash's experts: 6 tiles x 128 row blocks = 1.45 waves of 528): both row blocks' groups
# through one ring; the same sums. Against c9a9cc1 (*.base): the suite (one test_ops_cuda run with
# DSV4_MOE_RB=2 forced on every shape; logits byte for byte, whose 12-token-then-decode cases take RB = 2);
# bench_kernels --experts-only at batch 1 / 8 / 16 with auto (= RB 2 at 1), DSV4_MOE_RB=1 and =2 (forced),
# alternating, three rounds; decode new / rb1 / base at batch 1 / 8.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -50
for i in 1 2 3; do for v in 0 1 2; do
  DSV4_MOE_RB=$v timeout 60 $B/bench_kernels --experts-only --batch 1,8,16 > $R/moe-rb$v-$i.txt 2>&1
  echo "== rb $v run $i"; grep -viE "^#|^$|copy [0-9]* GB" $R/moe-rb$v-$i.txt | head -8 | cut -c1-120
done; done
for v in 0 1; do DSV4_MOE_RB=$v timeout 60 $B/bench_kernels.base --experts-only --batch 1,8,16 > $R/moe-base-$v.txt 2>&1; echo "== base"; grep -viE "^#|^$|copy [0-9]* GB" $R/moe-base-$v.txt | head -8 | cut -c1-120; done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;rb1=env DSV4_MOE_RB=1 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

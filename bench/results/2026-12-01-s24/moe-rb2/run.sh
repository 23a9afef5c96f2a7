#!/bin/sh
# call 3: k_moe16 with two row blocks a block (RB = 2) where that still leaves two waves or more (batch 4 and
# up on Flash), else one: both row blocks' groups through one ring, the hot loop as before (call 2's version
# added instructions to it and ran batch 1 with RB 2: both slower). The same sums. Against c9a9cc1 (*.base):
# the suite (test_ops_cuda with DSV4_MOE_RB=2 forced everywhere allowed; logits byte for byte);
# bench_kernels --experts-only at batch 1 / 8 / 16 / 64: auto, DSV4_MOE_RB=1, base, alternating, three rounds;
# the two-n-tile path (DSV4_MOE_NTT=2, batch 64) new / base; decode new / rb1 / base at batch 8 / 16 / 64.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -50
for i in 1 2 3; do for v in auto rb1 base; do
  case $v in auto) c="$B/bench_kernels";; rb1) c="env DSV4_MOE_RB=1 $B/bench_kernels";; base) c="$B/bench_kernels.base";; esac
  timeout 60 $c --experts-only --batch 1,8,16,64 > $R/moe-$v-$i.txt 2>&1
  echo "== $v run $i"; grep -E "^experts \(ref\.\) |^experts \(MXFP4\) " $R/moe-$v-$i.txt | cut -c1-90
done; done
for v in new base; do
  b=$B/bench_kernels; [ $v = base ] && b=$B/bench_kernels.base
  DSV4_MOE_NTT=2 timeout 60 $b --experts-only --batch 64 > $R/moe-ntt2-$v.txt 2>&1
  echo "== ntt2 $v"; grep -E "^experts \(ref\.\) |^experts \(MXFP4\) " $R/moe-ntt2-$v.txt | cut -c1-90
done
AB_REPEAT=2 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;rb1=env DSV4_MOE_RB=1 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 220 sh scripts/gpu_ab.sh "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 1: (a) k_mma_fp8s (wo_a at batch 1-8) with a step's activation scales loaded a step ahead in registers
# (with bq) and MS_BLOCKS(LO) 8 - the same sums; (b) DSV4_PROJ_SIDE=1: the compressors' and the indexer's
# BF16 projections of h on the second queue instead of the main chain - the same results. Against c9a9cc1
# (*.base): the suite with the base's logits (bit for bit), the bits with the knob on, decode new / side /
# base alternating at batch 1 / 8 / 16 (three rounds), the linears of both builds at batch 1 (two runs each).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 200 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
mv $R/bits.txt $R/bits-default.txt 2>/dev/null
DSV4_PROJ_SIDE=1 timeout 60 sh scripts/gpu_bits.sh > $R/bits-side.txt 2>&1; echo "bits (side) rc=$?"; cat $R/bits-side.txt
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;side=env DSV4_PROJ_SIDE=1 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 330 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
for i in 1 2; do for v in bench_kernels bench_kernels.base; do
  timeout 40 $B/$v --linear-only --batch 1 > $R/lin-$v-$i.txt 2>&1; echo "== $v $i"; grep -E "wo_a|\(FP8\)" $R/lin-$v-$i.txt | cut -c1-100 | head -12
done; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

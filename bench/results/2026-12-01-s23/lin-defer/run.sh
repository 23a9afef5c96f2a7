#!/bin/sh
# call 7: c96a2d4's deferred part sums generalised (backend.h linear_deferred): also the router's BF16 linear
# (k_mma_bf16, 8 parts along K a cluster at small batches) leaves its parts without the cluster and moe_route
# adds them in part order (the same bits). DSV4_LIN_DEFER is a mask (1 wo_b's FP8, 2 the router's BF16; 0 none).
# Against c9a9cc1 (*.base): the suite (test_ops_cuda's new cases bit for bit; the logits byte for byte) with a
# memcheck of Flash's shapes, decode all / wo_b only / none / base alternating at batch 1 / 8 / 16, three rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "FAILED|FAIL|identical|DIFFERENT|suite rc" $R/suite.txt | head -20
grep -E "ERROR SUMMARY" $R/suite.txt | grep -vc " 0 errors"
grep -h "linear_deferred" $R/ops_cuda.txt | head -8
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;wob=env DSV4_LIN_DEFER=1 $B/bench_cpu;none=env DSV4_LIN_DEFER=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 250 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

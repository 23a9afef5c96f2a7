#!/bin/sh
# call 5: wo_b's parts summed by the hc_post after it (backend.h linear_to_post; cuda_linear_to_post): where
# k_wg8 takes one part a block with the P blocks of a tile a cluster (wo_b at small batches: wob-probe/ found the
# cluster ~6.5 of its ~20 us at batch 1-8), the blocks write their parts without a cluster and hc_post adds
# them in part order - the cluster's sum, the same bits (DSV4_LIN_POST=0: the cluster). Against c9a9cc1
# (*.base): the suite (test_ops_cuda's new linear_to_post cases bit for bit; the logits byte for byte) with a
# memcheck of Flash's shapes, decode new / nopost / base alternating at batch 1 / 8 / 16, three rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -50
grep -h "linear_to_post" $R/ops_cuda*.txt | head -8
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;nopost=env DSV4_LIN_POST=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 250 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 2: producers writing their consumers' packs (the same bits): the attention's hc_split writes the FP8 pack
# of h for wq_a / wkv, the rmsnorm of q_lora that of wq_b (k_rmsnorm_wg8), norm_rope the BF16 copies of q and
# of the step's K=V rows the attention takes instead of k_attn_qpack (DSV4_PREPACK=0: the packs as before);
# the compressors' and the indexer's projections on the second queue now by default (DSV4_PROJ_SIDE=0: as
# before); with 7954653's k_mma_fp8s. Against c9a9cc1 (*.base): the suite with the base's logits (bit for bit)
# and a memcheck of Flash's shapes, decode new / nopre / noside / base alternating at batch 1 / 16 / 64
# (three rounds).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -50
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;nopre=env DSV4_PREPACK=0 $B/bench_cpu;noside=env DSV4_PROJ_SIDE=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 360 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

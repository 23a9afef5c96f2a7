#!/bin/sh
# call 8: lin-defer/ found the router's deferred parts 4 % slower at batch 1 (k_route's warp added its 8 parts a
# logit in a loop of dependent loads). Now every reader of parts (k_route, hc_post, the flush) loads a logit's
# parts at once, then adds them in part order (lin_parts_at: the same bits). The logits against c9a9cc1 (*.base)
# byte for byte, test_ops_cuda (the deferred cases bit for bit), decode all / wo_b only / none alternating at
# batch 1 / 8, three rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
timeout 60 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "bits rc=$?"; cat $R/bits.txt
DSV4_SRC=$PWD timeout 100 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "test_ops_cuda rc=$?"; grep -E "PASSED|FAILED" $R/ops_cuda.txt | head -3
grep -h "linear_deferred" $R/ops_cuda.txt | head -8
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;wob=env DSV4_LIN_DEFER=1 $B/bench_cpu;none=env DSV4_LIN_DEFER=0 $B/bench_cpu" \
  timeout 100 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
gzip -f $R/ops_cuda.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

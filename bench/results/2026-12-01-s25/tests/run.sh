#!/bin/sh
# call 8: test_ops_cuda with the cases added for k_mma_fp8s's three-stage ring (hi + lo activations at 6 and
# 8 tokens, wo_a's groups at 5 and 8), as built and with the suite's streamed-kernel settings (every shape on
# k_mma_fp8s, three groups a warp)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "FAIL|PASSED" $R/ops.txt
DSV4_WG8=0 DSV4_MMA_STREAM=2 DSV4_MMA_GPW=3 timeout 200 $B/test_ops_cuda > $R/ops-stream.txt 2>&1; echo "ops stream exit $?"
grep -E "FAIL|PASSED" $R/ops-stream.txt
grep -hE "n=(5|6|8) .*(in=1024|in=2048|in=512)" $R/ops.txt $R/ops-stream.txt | head -20
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

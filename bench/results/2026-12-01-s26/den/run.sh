#!/bin/sh
# s26 call 6: k_attn_md16 and k_attn_one sum their denominators through one helper (am_den, the review's
# mend of the copied loop): test_ops_cuda (every choice bit for bit, against the CPU) and the logits against
# 7dec4dd's build with the built-in choices and with one.json
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt; grep -E "FAIL|PASSED|exit" $R/ops_cuda.txt
sh scripts/gpu_bits.sh; mv $R/bits.txt $R/bits-auto.txt
DSV4_TUNE=$PWD/bench/results/2026-12-01-s26/one.json sh scripts/gpu_bits.sh; mv $R/bits.txt $R/bits-one.txt
gzip -9 -n $R/ops_cuda.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

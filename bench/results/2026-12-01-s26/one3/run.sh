#!/bin/sh
# s26 call 8: k_attn_one's third version: a block per (token, 16 heads, part), 8 warps (32 blocks a token:
# 32 SMs at batch 1 instead of 8; a warp a row in the copies). test_ops_cuda (every choice bit for bit, the
# CPU), the logits against 7dec4dd's with one.json, the attention tables with / without one.json
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt; grep -E "FAIL|PASSED|exit" $R/ops_cuda.txt
ONE=$PWD/bench/results/2026-12-01-s26/one.json
DSV4_TUNE=$ONE sh scripts/gpu_bits.sh
for v in one auto; do
  c=$B/bench_kernels; [ $v = one ] && c="env DSV4_TUNE=$ONE $B/bench_kernels"
  timeout 100 $c --attn-only --batch 1,8,16,64 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | head -12
done
gzip -9 -n $R/ops_cuda.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

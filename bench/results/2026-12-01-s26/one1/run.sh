#!/bin/sh
# s26 call 9: k_attn_one (third version) where a part has at most 96 rows, at 1 token a call (one1.json: the
# built-in table with "one" for 1 token): the logits against 7dec4dd's with it; decode with / without at
# batch 1 and batch 1 x 32k (3 rounds, alternating)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r9; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
ONE=$PWD/bench/results/2026-12-01-s26/one1.json
DSV4_TUNE=$ONE sh scripts/gpu_bits.sh
AB_REPEAT=3 AB_DECODE=32 AB_BINS="one1=env DSV4_TUNE=$ONE $B/bench_cpu;auto=$B/bench_cpu" timeout 200 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b1c32k:--batch 1 --context 32768"
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

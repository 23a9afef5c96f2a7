#!/bin/sh
# s27 call 11: the same build as call 10 (849e9d3), decode at batch 8 with its default (five-block experts from
# 4 tokens) against DSV4_MOE_NOB=0 (the ring everywhere), 3 rounds alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r11; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
AB_REPEAT=3 AB_DECODE=32 AB_BINS="nob=$B/bench_cpu;ring=env DSV4_MOE_NOB=0 $B/bench_cpu" timeout 60 sh scripts/gpu_ab.sh "b8:--batch 8"
cat $R/ab.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# s27 call 7: the head at 53c1352 (scripts/gpu_head.sh: decode at batch 1 / 8 / 16 / 64 and 16 x 128k, two
# runs each; a 4,096-token prefill, two; dsv4 serve + dsv4 bench at concurrency 1 / 8 / 16 / 64)
set -u
cd "$(dirname "$0")/../../../.."
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
sh scripts/gpu_head.sh
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

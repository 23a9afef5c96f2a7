#!/bin/sh
# (prepared in s28, NOT run) wip/tune-decode-shapes: dsv4 tune's figure over the shapes decode meets (CSA at 4k
# three times + HCA at 4k, 32k and 128k) instead of one CSA 4k + HCA 128k pair; does it now pick `one` at 1
# token (the built-in table's row, set from decode in v47) and what at 2 (s28's csa-pt/: `one` 0.9 % faster in
# decode at batch 2, one call)? Then decode at batch 1 / 2 / 4 with the new file against the built-in table.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r1
timeout 400 $B/dsv4 tune -o $R/tune.json > $R/tune.txt 2>&1
cat $R/tune.txt
AB_REPEAT=2 AB_DECODE=32 AB_BINS="tuned=env DSV4_TUNE=$R/tune.json $B/bench_cpu;auto=$B/bench_cpu" timeout 150 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b4:--batch 4"
cat $R/ab.txt
call_end

#!/bin/sh
# s33 call 4: dsv4 tune with wg64 / wg128 among the choices (the H200 table a new share/tune/h200.json comes
# from), then decode steps with that file (DSV4_TUNE) against the base build (main at the session's start,
# 54b1b1a: walk32 / walk64 / walk128 at 9-16 / 17-32 / 33-64 tokens): 8 Flash layers, reference numerics,
# prompt 16, 32 steps, 2 rounds alternating, at batch 16 / 32 / 64 and 16 / 64 x 32k.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw3
timeout 330 $B/dsv4 tune --reps 20 -o $R/tune.json > $R/tune.txt 2>&1; echo "tune exit $?"
cat $R/tune.txt | cut -c1-400
if [ -f $R/tune.json ]; then
  AB_REPEAT=2 AB_DECODE=32 AB_BINS="tuned=env DSV4_TUNE=$R/tune.json $B/bench_cpu;base=$B/bench_cpu.base" timeout 230 sh scripts/gpu_ab.sh "b16:--batch 16" "b32:--batch 32" "b64:--batch 64" "b16-32k:--batch 16 --context 32768" "b64-32k:--batch 64 --context 32768"
  cat $R/ab.txt
fi
call_end

#!/bin/sh
# s35 call 8: call 7's build against 8e5e8f6 (pack: LEAN=1 BASE=/tmp/base35, its bench_cpu built from this
# commit's bench/bench_cpu.c: both print the mean from the third step on, untraced), decode new / one piece /
# base alternating, 4 rounds, batch 1 / 2 / 16.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin steady
AB_REPEAT=4 AB_DECODE=64 AB_BINS="new=$B/bench_cpu;nocut=env DSV4_GRAPH_CUT=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

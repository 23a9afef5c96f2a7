#!/bin/sh
# s33 call 5: the suite with the new built-in table (share/tune/h200.json = call 4's dsv4 tune: one at 1-2
# tokens, parts32/16 at 3-8, wg64/64 at 9-32, wg128/64 above) and the logits against the base (main at the
# session's start) byte for byte; then decode in one binary, the new table against the old one (h200-walk.json:
# parts64/16 at 3-4, parts32/64 at 5-8, walk32 / walk64 / walk128 at 16 / 32 / 64, walk64 above) and the new
# table with the 64-wide ring at (32, 4) (DSV4_PVW_SMALL=1: 33 KB of shared memory against 97): 8 Flash
# layers, reference numerics, prompt 16 (--context C: C tokens of context without their prefill), 32 steps,
# 3 rounds alternating.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw4
D=bench/results/2026-12-01-s33/pvw
sh scripts/gpu_verify.sh
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;walk=env DSV4_TUNE=$D/h200-walk.json $B/bench_cpu;small=env DSV4_PVW_SMALL=1 $B/bench_cpu" timeout 400 sh scripts/gpu_ab.sh "b4:--batch 4" "b16:--batch 16" "b16-4k:--batch 16 --context 4096" "b64:--batch 64" "b64-4k:--batch 64 --context 4096"
cat $R/ab.txt
call_end

#!/bin/sh
# s29 call 2: s28's two prepared branches in one call (tmp merge of wip/moe-trace + wip/tune-decode-shapes;
# the trace code is inert without -DMOE_TRACE). The traced build rides as *.base (BASE=build-trace).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r2
for b in 1 8; do
  DSV4_MOE_TRACE=60 timeout 60 $B/bench_kernels.base --experts-only --batch $b > $R/experts-b$b.txt 2> $R/trace-b$b.txt
  echo "trace b$b lines: $(grep -c moetrace $R/trace-b$b.txt)"
done
timeout 330 $B/dsv4 tune -o $R/tune.json > $R/tune.txt 2>&1
echo "tune rc=$?"; cat $R/tune.txt | tail -40
AB_REPEAT=2 AB_DECODE=32 AB_BINS="tuned=env DSV4_TUNE=$R/tune.json $B/bench_cpu;auto=$B/bench_cpu" timeout 150 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b4:--batch 4"
cat $R/ab.txt
call_end

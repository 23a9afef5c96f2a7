#!/bin/sh
# s35 call 6: the step between two replays cut (pack: NOTOK=1 KTRACE=1 BASE=/tmp/base35, a build of 8e5e8f6):
# the plan in one copy, the sampler's requests and picks in mapped pinned memory (no copies), its greedy pass
# on 16-byte loads, the graph launched in two pieces (the first layer first). The check first (gpu_verify.sh:
# suite, memchecks, logits byte for byte against the base), then decode new / one piece (DSV4_GRAPH_CUT=0) /
# base alternating, 3 rounds, the new build's step between two replays (KTRACE_MODE=graph) and its nodes at batch 1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin step
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu;nocut=env DSV4_GRAPH_CUT=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64"
for b in 1 16; do
  KTRACE_MODE=graph CUDA_INJECTION64_PATH=$PWD/$B/libktrace.so KTRACE_OUT=$R/kg-b$b.csv timeout 90 $B/bench_cpu $BC --batch $b > $R/traced-b$b.txt 2>&1
  python3 bench/ktrace.py $R/kg-b$b.csv --step 30 > $R/kg-b$b.txt 2>&1; head -30 $R/kg-b$b.txt
  grep -v synth_fill_kernel $R/kg-b$b.csv | gzip -9 > $R/kg-b$b.csv.gz; rm $R/kg-b$b.csv
done
CUDA_INJECTION64_PATH=$PWD/$B/libktrace.so KTRACE_OUT=$R/kt-b1.csv timeout 90 $B/bench_cpu $BC --batch 1 > $R/traced-nodes-b1.txt 2>&1
python3 bench/ktrace.py $R/kt-b1.csv --nodes > $R/kt-b1.txt 2>&1; head -5 $R/kt-b1.txt
grep -v synth_fill_kernel $R/kt-b1.csv | gzip -9 > $R/kt-b1.csv.gz; rm $R/kt-b1.csv
call_end

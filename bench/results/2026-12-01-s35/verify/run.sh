#!/bin/sh
# s35 call 7: call 6's build plus the step's first op in one kernel (embed_hc: the embedding, its BF16
# rounding and the four hyper-connection copies; pack: NOTOK=1 KTRACE=1 BASE=/tmp/base35, a build of 8e5e8f6).
# The check (gpu_verify.sh: suite with test_ops_cuda's embed_hc cases, memchecks, logits byte for byte against
# the base), decode new / one piece / base alternating (3 rounds), then each of the three's step between two
# replays at batch 1 and 16 in one call (KTRACE_MODE=graph).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu;nocut=env DSV4_GRAPH_CUT=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64"
for b in 1 16; do
  for v in new nocut base; do
    case $v in new) cmd=$B/bench_cpu;; nocut) cmd="env DSV4_GRAPH_CUT=0 $B/bench_cpu";; base) cmd=$B/bench_cpu.base;; esac
    KTRACE_MODE=graph CUDA_INJECTION64_PATH=$PWD/$B/libktrace.so KTRACE_OUT=$R/kg-$v-b$b.csv timeout 90 $cmd $BC --batch $b > $R/traced-$v-b$b.txt 2>&1
    python3 bench/ktrace.py $R/kg-$v-b$b.csv --step 30 > $R/kg-$v-b$b.txt 2>&1; echo "== $v b$b"; head -1 $R/kg-$v-b$b.txt
    grep -v synth_fill_kernel $R/kg-$v-b$b.csv | gzip -9 > $R/kg-$v-b$b.csv.gz; rm $R/kg-$v-b$b.csv
  done
done
call_end

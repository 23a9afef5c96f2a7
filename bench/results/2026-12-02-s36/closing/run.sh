#!/bin/sh
# s36 call 4: the head as it lands - k_sample over blocks, k_embed16, the compressors' projections forked
# before wq_a / wkv (DSV4_PROJ_EARLY=0 the baseline in the same binary); k_mma_bf16s is not in it - and the
# queues' priorities as a knob (DSV4_QPRIO=1: the first queue's kernels' blocks before the second's; 2: the
# reverse). Pack: NOTOK=1 KTRACE=1 BASE=<a build of main b5c45a9>. The suite (defaults), the step's nodes at
# batch 1 (new, qp1), decode new / qp1 / qp2 / noearly / base from the third step at batch 1 and 16, 3 rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin closing
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
sh scripts/gpu_ktrace.sh b1 "$B/bench_cpu $BC"
DSV4_QPRIO=1 sh scripts/gpu_ktrace.sh qp1-b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu;qp1=env DSV4_QPRIO=1 $B/bench_cpu;qp2=env DSV4_QPRIO=2 $B/bench_cpu;noearly=env DSV4_PROJ_EARLY=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

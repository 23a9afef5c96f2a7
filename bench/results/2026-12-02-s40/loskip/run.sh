#!/bin/sh
# s40 call 4: k_mma_fp8s leaving out a step's lo MMAs where every lane's lo words are zero (a warp vote a step;
# BF16-valued activations within F16's range after the group's scale: nearly every step) - +0 products, so the
# same sums, half of each step's MMA chain. The suite (bits against .base = 6bd09e3: the streamed kernel at 1-8
# tokens against k_mma_fp8 at 12, NaN/Inf cases), a node trace at batch 1, decode new / base at batch 1 and 8;
# then the head's figures on .base (6bd09e3: the session's landed code; gpu_head.sh, one run each, no server).
# Pack: BASE=<6bd09e3's build> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin loskip
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 64 --batch 1 --overlap"
grep -E "k_mma_fp8s" $R/kt-new-b1.txt | head -6
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
rm -f $R/ab-*.json
cp $B/bench_cpu.base $B/bench_cpu
HEAD_RUNS=1 HEAD_SERVE=0 timeout 150 sh scripts/gpu_head.sh
call_end

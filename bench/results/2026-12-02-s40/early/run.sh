#!/bin/sh
# s40 call 3: (1) the routed experts' down pass launched under gate / up's second wave: the M pack
# (k_moe_pack16<.., EARLY>) lets its dependents launch before it waits, so the down blocks take the SMs gate /
# up's second wave leaves and issue their first weights before gate / up ends (DSV4_MOE_EARLY=0: as before);
# (2) k_mma_fp8s's weight copies asking L2 for the aligned 256 bytes around each miss (this pair's 128 and the
# next's; DSV4_MMA_L2PF=0: as before). Both only move copies: the same bits. The suite (bits against .base =
# 6bd09e3), the experts alone both ways, a node trace at batch 1, decode new / noearly / nopf / base.
# Pack: BASE=<6bd09e3's build> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin early
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
for i in 1 2; do
  timeout 60 $B/bench_kernels --experts-only --batch 1,2,16 > $R/exp-new-$i.txt 2>&1
  DSV4_MOE_EARLY=0 timeout 60 $B/bench_kernels --experts-only --batch 1,2,16 > $R/exp-noearly-$i.txt 2>&1
done
head -12 $R/exp-new-1.txt; head -12 $R/exp-noearly-1.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 64 --batch 1 --overlap"
grep -E "k_mma_fp8s|k_moe16|k_moe_pack16" $R/kt-new-b1.txt | head -8
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;noearly=env DSV4_MOE_EARLY=0 $B/bench_cpu --overlap;nopf=env DSV4_MMA_L2PF=0 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 330 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

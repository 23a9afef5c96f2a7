#!/bin/sh
# s36 call 3: the compressors' projections and compressors forked before wq_a / wkv (DSV4_PROJ_EARLY=0 the
# baseline in the same binary), k_mma_bf16s only where the tiles are split along K (P > 1: not the LM head),
# k_embed16 (the BF16 embedding by 16-byte loads). Pack: NOTOK=1 KTRACE=1 BASE=<a build of main b5c45a9>.
# The suite first (test_ops_cuda's new embed and BF16 decode cases; graphs with two queues against direct
# ops), then the BF16 linears alone, the step's nodes at batch 1 (new, noearly), decode new / noearly / nobf /
# base from the third step.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin early
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
timeout 120 $B/bench_kernels --linear-only --batch 1 > $R/lin-new.txt 2>&1; grep -E "BF16" $R/lin-new.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu $BC"
DSV4_PROJ_EARLY=0 sh scripts/gpu_ktrace.sh noearly-b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu;noearly=env DSV4_PROJ_EARLY=0 $B/bench_cpu;nobf=env DSV4_MMA_STREAM_BF=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

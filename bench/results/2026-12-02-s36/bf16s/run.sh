#!/bin/sh
# s36 call 2: decode's BF16 linears streamed (k_mma_bf16s; DSV4_MMA_STREAM_BF=0 the baseline in the same
# binary), k_mma_fp8s's unit end shared with it (ms_unit_end), k_sample's request read once a block. Pack:
# NOTOK=1 KTRACE=1 BASE=<a build of main b5c45a9>. The bits first (the suite: test_ops_cuda's new BF16 decode
# cases, and every shape streamed in its DSV4_MMA_STREAM=2 run), then the BF16 linears alone (streamed /
# not / every shape streamed), the step's nodes at batch 1 and decode new / nobf / base from the third step.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bf16s
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
for v in "new=" "nobf=DSV4_MMA_STREAM_BF=0" "all=DSV4_MMA_STREAM=2"; do
  n=${v%%=*} e=${v#*=}
  env $e timeout 120 $B/bench_kernels --linear-only --batch 1,2,8 > $R/lin-$n.txt 2>&1
  echo "== linears $n"; grep -E "BF16" $R/lin-$n.txt
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu;nobf=env DSV4_MMA_STREAM_BF=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

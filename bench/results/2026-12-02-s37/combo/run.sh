#!/bin/sh
# s37 call 1, on wip/combo (wip/moe-whole merged with wip/hc-post-mix, both on 109387b; with both knobs off the
# code is main's): k_moe16w (DSV4_MOE_WHOLE=1) and the light k_hc_post_mix (DSV4_HC_FUSE, on by default on the
# branch). Pack: NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh. test_ops_cuda (moe whole and hc_fuse bits, the BF16
# embed fallback of 109387b), the suite with both on, the experts alone on / off at 1-16 tokens (2 rounds), the
# step's nodes at batch 1 with both on, decode both / moe only / hc only / neither (main), 3 rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin combo
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -iE "whole|fuse|embed|PASSED|FAILED" $R/ops.txt | head -20
DSV4_MOE_WHOLE=1 VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
for i in 1 2; do
  for v in "on=DSV4_MOE_WHOLE=1" "off=DSV4_MOE_WHOLE=0"; do
    n=${v%%=*} e=${v#*=}
    env $e timeout 100 $B/bench_kernels --experts-only --batch 1,2,4,8,16 > $R/experts-$n-$i.txt 2>&1
    echo "== $n $i"; grep -iE "expert" $R/experts-$n-$i.txt | head -8
  done
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
DSV4_MOE_WHOLE=1 sh scripts/gpu_ktrace.sh both-b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=env DSV4_MOE_WHOLE=1 $B/bench_cpu;moe=env DSV4_MOE_WHOLE=1 DSV4_HC_FUSE=0 $B/bench_cpu;hc=env DSV4_MOE_WHOLE=0 $B/bench_cpu;main=env DSV4_MOE_WHOLE=0 DSV4_HC_FUSE=0 $B/bench_cpu" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

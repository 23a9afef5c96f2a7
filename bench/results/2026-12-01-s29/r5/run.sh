#!/bin/sh
# s29 call 5: gate / up's blocks prefetching the down projection's weights into L2 (moe16_l2pf; by default
# where down's bytes fit: 1 token) against the same build with DSV4_MOE_L2PF=0, and with the evict-last
# policy (DSV4_MOE_L2PF_LAST=1): the suite with memchecks (test_ops_cuda compares the knob off / on bit for
# bit on every expert case) and logits against e007a00 (.base); the experts alone at 1 / 2 / 4 tokens (forced
# on at 2 / 4); decode at batch 1 (3 rounds) and 2 (forced on, 2 rounds).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r5
sh scripts/gpu_verify.sh
for v in off on last; do
  case $v in off) e="DSV4_MOE_L2PF=0" ;; on) e="DSV4_MOE_L2PF=1" ;; last) e="DSV4_MOE_L2PF=1 DSV4_MOE_L2PF_LAST=1" ;; esac
  env $e timeout 60 $B/bench_kernels --experts-only --batch 1,2,4 > $R/experts-$v.txt 2>&1
  echo "== $v ($e)"; grep -E "^experts \(ref\.\)" $R/experts-$v.txt
done
timeout 60 $B/bench_kernels.base --experts-only --batch 1,2,4 > $R/experts-base.txt 2>&1
echo "== base"; grep -E "^experts \(ref\.\)" $R/experts-base.txt
AB_REPEAT=3 AB_DECODE=32 AB_BINS="on=$B/bench_cpu;off=env DSV4_MOE_L2PF=0 $B/bench_cpu;last=env DSV4_MOE_L2PF_LAST=1 $B/bench_cpu" \
  timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1"
AB_REPEAT=2 AB_DECODE=32 AB_BINS="on=env DSV4_MOE_L2PF=1 $B/bench_cpu;off=$B/bench_cpu" timeout 100 sh scripts/gpu_ab.sh "b2:--batch 2"
cat $R/ab.txt
call_end

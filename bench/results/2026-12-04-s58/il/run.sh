#!/bin/sh
# s58 il/: the routed experts' loop two groups a step (il.diff: k_moe16<..., IL> on the 2-pair tiles' four-stage
# ring, DSV4_MOE_IL=1; groups i and i + 1 decoded and multiplied side by side while i + 2, i + 3 are in flight;
# 128 registers under launch bounds of four blocks an SM, no spills; every other kernel's SASS unchanged). First
# test_ops_cuda with DSV4_MOE_BP=1 DSV4_MOE_IL=1 (its expert cases compare the 2-pair tiles - now IL - with the
# 8-pair tiles bit for bit); then the experts alone at 1 / 2 / 4 tokens, two rounds: the tree (new: 8-pair tiles
# below 4), 2-pair tiles (bp1), IL (il); decode at batch 1 / 2 / 4 the same three ways, three rounds.
# Pack: KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin il
(export DSV4_MOE_BP=1 DSV4_MOE_IL=1; call_ops "moe_experts")
call_kernels experts 2 "new=$B/bench_kernels;bp1=env DSV4_MOE_BP=1 $B/bench_kernels;il=env DSV4_MOE_BP=1 DSV4_MOE_IL=1 $B/bench_kernels" "--experts-only --batch 1,2,4"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_ab 3 "new=$B/bench_cpu --overlap;bp1=env DSV4_MOE_BP=1 $B/bench_cpu --overlap;il=env DSV4_MOE_BP=1 DSV4_MOE_IL=1 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b2:--batch 2" "b4:--batch 4"
call_end

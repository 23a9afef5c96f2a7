#!/bin/sh
# s58 il2/: il/ again with the IL kernels' shared-memory attribute set (il/'s launches of them failed: "invalid
# argument", 54 KB without cudaFuncAttributeMaxDynamicSharedMemorySize). test_ops_cuda with DSV4_MOE_BP=1
# DSV4_MOE_IL=1; the experts alone at 1 / 2 / 4 tokens, two rounds, the tree (new) against IL (il); decode at
# batch 1 / 2 / 4, three rounds, the same two (il/ has the 2-pair tiles without IL, bp1).
# Pack: KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin il2
(export DSV4_MOE_BP=1 DSV4_MOE_IL=1; call_ops "moe_experts")
call_kernels experts 2 "new=$B/bench_kernels;il=env DSV4_MOE_BP=1 DSV4_MOE_IL=1 $B/bench_kernels" "--experts-only --batch 1,2,4"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_ab 3 "new=$B/bench_cpu --overlap;il=env DSV4_MOE_BP=1 DSV4_MOE_IL=1 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b2:--batch 2" "b4:--batch 4"
call_end

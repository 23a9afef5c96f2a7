#!/bin/sh
# s52: the weights' streams under an L2 evict-first policy (l2_wpolicy: k_moe16's and k_mma_fp8's cp.async,
# k_wg8's TMA) so the code and small data every layer's kernels read again stay in L2 - decode at batch 1, 8
# and 16 with neither it nor the router in its linear's last block (DSV4_L2_EVICT=0 DSV4_ROUTE_FUSE=0: v70's
# kernels), with the policy alone (DSV4_ROUTE_FUSE=0) and with both (the build's default), the same binary, two
# rounds alternating; the warm 4,096-token prefill with and without the policy; node traces of batch 1 with the
# policy alone and with neither.
# Pack: NOTOK=1 LEAN=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin l2
call_ab 2 "base=env DSV4_L2_EVICT=0 DSV4_ROUTE_FUSE=0 $B/bench_cpu --overlap;l2=env DSV4_ROUTE_FUSE=0 $B/bench_cpu --overlap;l2fuse=$B/bench_cpu --overlap" \
  "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
call_prefill 2 "base=env DSV4_L2_EVICT=0 $B/bench_cpu;l2=$B/bench_cpu"
(export DSV4_ROUTE_FUSE=0; call_trace l2-b1 "--batch 1")
(export DSV4_ROUTE_FUSE=0 DSV4_L2_EVICT=0; call_trace base-b1 "--batch 1")
call_end

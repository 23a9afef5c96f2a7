#!/bin/sh
# s52 l2b: l2/ again with the policy a constant (l2/'s run-time fraction made k_mma_fp8s's LDGSTS an illegal
# instruction): the weights' streams under L2 evict-first against a build without the hint (-DDSV4_L2_NO_HINT,
# carried as *.base), the router's fusion off on both (DSV4_ROUTE_FUSE=0), and this build with it on - decode
# at batch 1, 8 and 16, two rounds alternating; the warm 4,096-token prefill; a node trace of batch 1.
# Pack: BASE=<build-gpu of this tree with -DCMAKE_CUDA_FLAGS=-DDSV4_L2_NO_HINT> NOTOK=1 LEAN=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin l2b
call_ab 2 "base=env DSV4_ROUTE_FUSE=0 $B/bench_cpu.base --overlap;l2=env DSV4_ROUTE_FUSE=0 $B/bench_cpu --overlap;l2fuse=$B/bench_cpu --overlap" \
  "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
call_prefill 2 "base=$B/bench_cpu.base;l2=$B/bench_cpu"
(export DSV4_ROUTE_FUSE=0; call_trace l2-b1 "--batch 1")
call_end

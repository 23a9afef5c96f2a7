#!/bin/sh
# s53: the router's chain shortened - k_route loads the bias before its PDL wait, takes its rounds' argmax by
# two redux.sync (DSV4_ROUTE_RX=0: the shuffle butterfly) and, where one block routes every token (up to 4
# tokens, 32 pairs), writes the experts' plan itself so no k_moe_plan runs (be->moe_next; DSV4_ROUTE_PLAN=0:
# never); the gate's k_mma_bf16 lets k_route start under it (DSV4_MMA_TRIG=0: no trigger). test_ops_cuda, the
# logits against c9c7bef's build byte for byte, then decode: all three (new), none (old), all but the plan
# (noplan), the same binary, three rounds alternating; a node trace of the new build at batch 1.
# Pack: BASE=<build-gpu of c9c7bef> NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rp
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "FAIL|PASSED|FAILED|route plan" "$R/ops.txt" | head -8
gzip -9 -n "$R/ops.txt"
BITS_REPEAT=1 sh scripts/gpu_bits.sh | tail -8
call_ab 3 "new=$B/bench_cpu --overlap;old=env DSV4_ROUTE_PLAN=0 DSV4_ROUTE_RX=0 DSV4_MMA_TRIG=0 $B/bench_cpu --overlap;noplan=env DSV4_ROUTE_PLAN=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b16:--batch 16"
call_trace new-b1 "--batch 1"
call_end

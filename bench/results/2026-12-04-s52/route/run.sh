#!/bin/sh
# s52: the router in its BF16 linear's last block (moe_gate_route, k_mma_bf16_route, v71) - test_ops_cuda (its
# moe_gate_route cases compare the fused path with the linear, k_route and k_moe_plan bit for bit), the logits
# against 4a150c1's build (v70) byte for byte (gpu_bits.sh), then decode with the router
# fused (the default) and not (DSV4_ROUTE_FUSE=0), the same binary, three rounds alternating, and a node trace
# of batch 1.
# Pack: BASE=<build-gpu of 4a150c1> NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin route
timeout 200 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "moe_gate_route|FAIL|PASSED|FAILED" "$R/ops.txt" | head -20
gzip -9 -n "$R/ops.txt"
BITS_REPEAT=2 sh scripts/gpu_bits.sh
call_ab 3 "fuse=$B/bench_cpu --overlap;nofuse=env DSV4_ROUTE_FUSE=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b2:--batch 2" "b8:--batch 8" "b16:--batch 16"
call_trace b1 "--batch 1"
call_end

#!/bin/sh
# s52: k_route's code rolled (one copy of the softplus with the values rotated through it, the rounds' loops not
# unrolled: k_route<8> 867 PTX lines against 2,308) - test_ops_cuda (its moe_route cases against the CPU), the
# logits against 4a150c1's build (v70) byte for byte (gpu_bits.sh), decode against that build at batch 1, 2, 8
# and 16, three rounds alternating, and a node trace of batch 1.
# Pack: BASE=<build-gpu of 4a150c1> NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rolled
timeout 200 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "moe_route|FAIL|PASSED|FAILED" "$R/ops.txt" | head -12
gzip -9 -n "$R/ops.txt"
BITS_REPEAT=2 sh scripts/gpu_bits.sh
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b2:--batch 2" "b8:--batch 8" "b16:--batch 16"
call_trace b1 "--batch 1"
call_end

#!/bin/sh
# s55 exp4/: the tree with the review's mends (the router's plan and choice kept for the experts, cuda_moe_plan_pend
# taking a route_plan, k_route without its empty branch, the trigger set where the jobs are built, the test asking
# the backend whether the experts are on the tensor cores) and two experiments off by default: DSV4_QPRIO=1 (the
# main queue at the greatest stream priority, the second at the least; every cuda_launch carries its stream's
# priority and the decode graph is instantiated with the nodes' priorities) and exp3's part cap for BF16 linears
# of 16 row tiles or more (DSV4_BF16_PMAX=4). First test_ops_cuda (default, and with DSV4_QPRIO=1) and the logits
# against the base build (f386fb5) byte for byte; then decode at batch 1 / 16 / 64 / 1 x 4k, three rounds
# alternating: default, qprio, t16, qprio + t16; a node trace of batch 1 with qprio.
# Pack: BASE=<f386fb5's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin exp4
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"; grep -E "FAIL|PASSED|exit" "$R/ops.txt"
DSV4_QPRIO=1 timeout 300 $B/test_ops_cuda > "$R/ops-qprio.txt" 2>&1; echo "exit $?" >> "$R/ops-qprio.txt"; grep -E "FAIL|PASSED|exit" "$R/ops-qprio.txt"
gzip -f "$R"/ops*.txt
BITS_REPEAT=1 sh scripts/gpu_bits.sh
call_ab 3 "new=$B/bench_cpu --overlap;qp=env DSV4_QPRIO=1 $B/bench_cpu --overlap;t16=env DSV4_BF16_PMAX=4 $B/bench_cpu --overlap;qpt16=env DSV4_QPRIO=1 DSV4_BF16_PMAX=4 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b1c4k:--batch 1 --context 4096"
export DSV4_QPRIO=1
call_trace qp-b1 "--batch 1"
unset DSV4_QPRIO
call_end

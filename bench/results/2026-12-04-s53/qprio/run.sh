#!/bin/sh
# s53: the two queues' stream priorities (DSV4_QPRIO: 0 none, the build's default; 1 the main queue's blocks
# first where both queues have blocks waiting - the routed experts before the shared expert beside them; 2 the
# side queue's first), every launch through cuda_launch carrying its stream's priority (cudaLaunchAttributePriority,
# kept by the decode graph's nodes). Decode, the same binary, three rounds alternating; node traces at batch 1
# with 1 and 0.
# Pack: NOTOK=1 LEAN=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin qprio
call_ab 3 "q0=$B/bench_cpu --overlap;q1=env DSV4_QPRIO=1 $B/bench_cpu --overlap;q2=env DSV4_QPRIO=2 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b16:--batch 16"
(export DSV4_QPRIO=1; call_trace q1-b1 "--batch 1")
call_trace q0-b1 "--batch 1"
call_end

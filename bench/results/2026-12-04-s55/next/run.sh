#!/bin/sh
# s55 next/ (s54's prepared call, run on f386fb5, two rounds): the tree's two new measurement knobs on
# one binary. (1) DSV4_QNR_SIDE=0: a CSA layer's query heads' norm-RoPE on the main queue instead of queued on
# the second one behind the compressors (KERNEL_NOTES "State after s54", next 1; ~2 us a CSA layer expected).
# (2) bench_cpu --stagger at batch 16 and 64 (sequence b b positions later: the compression windows complete on
# different steps, as a server's) beside the same batches in step, and at a 4k context (an HCA window completes
# within the 64 steps). Decode, three rounds alternating; a node trace of batch 16 staggered.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
call_ab 2 "qs=$B/bench_cpu --overlap;qm=env DSV4_QNR_SIDE=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b1c4k:--batch 1 --context 4096"
call_ab 2 "step=$B/bench_cpu --overlap;stag=$B/bench_cpu --overlap --stagger" \
  "b16s:--batch 16" "b64s:--batch 64" "b16c4ks:--batch 16 --context 4096"
call_trace stag-b16 "--batch 16 --stagger"
call_end

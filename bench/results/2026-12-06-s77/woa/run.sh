#!/bin/sh
# s77 woa/: what bounds wo_a's kernel at one token (l2p/: with its weights prefetched into L2 it still took 16.4 us
# against 18.5 in the graph). bench_kernels' new table times wo_a as the model runs it - 8 groups in one
# linear_groups launch, unquantised activations, reference numerics - cold (copies rotated past the 50 MB L2) and warm
# (one copy again and again), beside the other linears (--linear-only) at 1 and 16 tokens, two rounds.
# Pack: AS=woa LEAN=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh woa=bench/results/2026-12-06-s77/woa/run.sh (~2 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin woa
call_kernels lin 2 "new=$B/bench_kernels" "--linear-only --batch 1,16"
grep -h -A3 "wo_a, all groups" "$R"/lin-new-*.txt
call_end

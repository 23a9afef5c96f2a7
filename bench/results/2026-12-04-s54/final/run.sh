#!/bin/sh
# s54 final/: the session's decode against its base build (5a3f845's kernels), batch 1 to 64, three rounds
# alternating; the warm 4,096-token prefill, two rounds; a node trace at batch 1.
# Pack: as verify/'s.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b8:--batch 8" "b16:--batch 16" "b32:--batch 32" "b64:--batch 64"
call_prefill 2 "new=$B/bench_cpu;base=$B/bench_cpu.base"
call_trace new-b1 "--batch 1"
call_end

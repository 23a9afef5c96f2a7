#!/bin/sh
# s70 dec/ (the def/ bundle): decode with k_attn_one's new defaults against the base build, batch 2 and 3 at 4k
# (where the attention alone gained 10-12 %), two rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin dec
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b2x4k:--batch 2 --context 4096" "b3x4k:--batch 3 --context 4096"
sort "$R/ab.txt" | uniq
call_end

#!/bin/sh
# s60 aftrace/ (prepared in s59, run in s60 on d30c8ef): k_attn_one at one token phase by phase
# after the per-part weights (CSA 4k 10.5 us alone, 0.5 from the 10-us target): a build with -DAF_TRACE (thread 0
# of each block of token 0's first head group stamps clock64 at each phase's end) carried as bench_kernels.base,
# as s34's trace2/ did; bench/af_trace.py prints the table (its phases since s59: ... scores, max+sum+wts, pv,
# sums+barrier, join, combine). s34's trace of the kernel before: python3 bench/af_trace.py --before-s59
# bench/results/2026-12-01-s34/trace2/trace.txt.gz.
# Pack, here:
#   cmake -S . -B build-trace -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DAF_TRACE
#   cmake --build build-trace --target bench_kernels bench_cpu dsv4
#   BASE=build-trace KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin aftrace
timeout 200 $B/bench_kernels.base --attn-only --batch 1 --reps 8 > "$R/trace.txt" 2>&1
echo "trace exit $?"
python3 bench/af_trace.py "$R/trace.txt" | head -40
gzip -9 -n "$R/trace.txt"
call_kernels attn 2 "new=$B/bench_kernels" "--attn-only --batch 1"
call_ncu md16-b64 "k_attn_md16" "--attn-only --batch 64 --reps 8" 8   # the landed k_attn_md16 at 64 tokens (CSA 4k), a baseline for its instructions
call_end

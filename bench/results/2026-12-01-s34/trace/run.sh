#!/bin/sh
# s34: where k_attn_one's time goes at batch 1 now (v53), phase by phase: a build with -DAF_TRACE (attn.cu's
# clock64 stamps, thread 0 of token 0's first head group) packed as the *.base binaries
# (BASE=build-trace sh scripts/gpu_pack.sh); bench_kernels --attn-only --batch 1, and the plain build's table.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin trace
timeout 100 $B/bench_kernels.base --attn-only --batch 1 --reps 8 > $R/trace.txt 2>&1; echo "rc=$?"
grep -c aftrace $R/trace.txt
timeout 100 $B/bench_kernels --attn-only --batch 1 > $R/attn.txt 2>&1
grep -E "^(CSA|HCA)" $R/attn.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}'
gzip -9 -n $R/trace.txt
call_end

#!/bin/sh
# s74 lpa/ (after wga/: k_wg8's parts' sums by st.async kept the bits, its linears alone up to 12 % faster at 1-16
# tokens, decode even): every K-split linear's cluster sum by st.async (rowdot.cuh's cl_push_*: mma_finish in
# k_mma_fp8 / k_mma_bf16, wg_store in k_wgbf / k_wgf8, k_wg8 on the same helpers), DSV4_LIN_ASYNC=0 the cluster
# barrier (whose release is a MEMBAR.ALL.GPU) in the same binary. The base build (c95500d8) rides along for the
# logits byte for byte.
# - the whole GPU suite first (test_ops_cuda's linears bit for bit against the CPU in four configurations, the
#   prefill kernels for every call, the logits against the base build, memchecks);
# - the linears alone at 1 / 16 / 64 tokens both ways; decode on 8 Flash-shaped layers at batch 1 (3 rounds), 16 and
#   64 (2 rounds) both ways; the warm 4,096-token prefill both ways (k_wgbf / k_wgf8 / k_wg8 clusters);
# - memcheck on k_mma_bf16, k_mma_fp8 and k_wgbf (the linears at 1 / 16 / 64 tokens).
# Pack: AS=lpa BASE=/tmp/base-s74 NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh lpa=bench/results/2026-12-06-s74/lpa/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin lpa
call_verify VERIFY_TIMEOUT=330
A0="env DSV4_LIN_ASYNC=0"
call_kernels lin 2 "new=$B/bench_kernels;a0=$A0 $B/bench_kernels" "--linear-only --batch 1,16,64"
call_snap
call_ab 3 "new=$B/bench_cpu --overlap;a0=$A0 $B/bench_cpu --overlap" "b1:--batch 1"
call_ab 2 "new=$B/bench_cpu --overlap;a0=$A0 $B/bench_cpu --overlap" "b16:--batch 16" "b64:--batch 64"
sort "$R/ab.txt" | uniq
call_snap
call_prefill 2 "new=$B/bench_cpu;a0=$A0 $B/bench_cpu"
call_snap
for k in k_mma_bf16 k_mma_fp8 k_wgbf; do call_memcheck $k "--linear-only --batch 1,16,64 --reps 1"; done
call_end

#!/bin/sh
# s73 csp/ (after fin/: a release at cluster scope is a MEMBAR.ALL.GPU in SASS, and k_attn_one's cost ~1,200 cycles;
# the same barrier ends every K-split linear's cluster sum: cluster_sum_parts (mma.cu's k_mma_fp8 / k_mma_bf16) and
# wg_store (wg8.cu's k_wg8, k_wgbf, k_wgf8)). *.base: a probe build of the bundle's tree with csp/csp.diff under
# -DCSP_PROBE_RELAX - those two barriers relaxed (no release: the parts' stores are not ordered before it, so its
# values are not guaranteed - timing only). What would the linears gain without the membar?
# - the linears alone (bench_kernels --linear-only) at 1 / 16 / 64 tokens;
# - decode on 8 Flash-shaped layers at batch 1 / 16 / 64, three rounds.
# Pack: AS=csp BASE=/tmp/build-csp LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin csp
call_kernels lin 2 "new=$B/bench_kernels;relax=$B/bench_kernels.base" "--linear-only --batch 1,16,64"
call_snap
call_ab 3 "new=$B/bench_cpu --overlap;relax=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
sort "$R/ab.txt" | uniq
call_end

#!/bin/sh
# s73 csp/ (after fin/: a release at cluster scope is a MEMBAR.ALL.GPU in SASS, and k_attn_one's cost ~1,200 cycles;
# the same barrier ends every K-split linear's cluster sum: cluster_sum_parts (mma.cu's k_mma_fp8 / k_mma_bf16) and
# wg_store (wg8.cu's k_wg8, k_wgbf, k_wgf8)). *.base: a probe build of the bundle's tree with csp/csp.diff under
# -DCSP_PROBE_RELAX - those two barriers relaxed (no release: the parts' stores are not ordered before it, so its
# values are not guaranteed - timing only). What would the linears gain without the membar?
# - (after the attention above) the linears alone (bench_kernels --linear-only) at 1 / 16 / 64 tokens;
# - decode on 8 Flash-shaped layers at batch 1 / 16, two rounds (the session's device time nearly spent).
# Pack: AS=csp BASE=/tmp/build-csp LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin csp
# first, on whatever GPU came (an H200 is what issue #8's targets name): the one-token attention, landed against the
# barrier (the same binary, DSV4_ATTN_ONE_ASYNC=0)
call_kernels attn 2 "new=$B/bench_kernels;a0=env DSV4_ATTN_ONE_ASYNC=0 $B/bench_kernels" \
  "--attn-only --batch 1 --contexts 4096,131072"
call_attn_ab a0 new
call_snap
call_kernels lin 2 "new=$B/bench_kernels;relax=$B/bench_kernels.base" "--linear-only --batch 1,16,64"
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;relax=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_end

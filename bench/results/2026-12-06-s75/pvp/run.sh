#!/bin/sh
# s74 pvp/ (prepared on branch wip/pv-push, NOT GPU-run): k_attn_pv's PARTS join (the built-in table's sum at 4-8
# tokens: parts32; a cluster of the token's 8 parts, each owning 8 heads' outputs) with the parts' sums sent to
# their owners by st.async (cl_push_*, as s74's linears) instead of through a cluster barrier whose release is a
# MEMBAR.ALL.GPU; the owners join them in part order with the same factors: the same bits.
# DSV4_ATTN_PV_ASYNC=0: the barrier (the same binary). The branch sits on main's s74 HEAD, whose last code commits (8b1f5d84,
# 511c8825: k_wg8's early form removed, mma_finish's init after its block barrier; 2f599e2d: the exchange written
# once, cl_push_parts) have not run on a GPU either: the suite first covers them.
# - the whole GPU suite (scripts/gpu_verify.sh: test_ops_cuda's attention at every choice bit for bit against the
#   CPU, the logits against the base build byte for byte, memchecks);
# - the attention alone at 4 / 8 tokens, 4k / 128k, both ways; decode at batch 4 / 8 both ways; memcheck on k_attn_pv.
# Pack (on the branch): AS=pvp BASE=<main's c95500d8 build, or the s74 HEAD's> NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh pvp=bench/results/2026-12-06-s74/pvp/run.sh (~8 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pvp
call_verify VERIFY_TIMEOUT=330
A0="env DSV4_ATTN_PV_ASYNC=0"
call_kernels attn 2 "new=$B/bench_kernels;a0=$A0 $B/bench_kernels" "--attn-only --batch 4,8 --contexts 4096,131072"
call_attn_ab a0 new
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;a0=$A0 $B/bench_cpu --overlap" "b4:--batch 4" "b8:--batch 8"
sort "$R/ab.txt" | uniq
call_snap
call_memcheck k_attn_pv "--attn-only --batch 4,8 --contexts 4096,131072 --reps 1"
call_end

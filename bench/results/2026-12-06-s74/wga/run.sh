#!/bin/sh
# (Ran in s74, moved here from bench/results/2026-12-06-s73/wga/ with its outputs: README.md. Its a0 knob,
# DSV4_WG8_ASYNC, is DSV4_LIN_ASYNC since.)
# s73 wga/ (prepared on branch wip/wg8-async, NOT GPU-run; after csp/: the K-split linears' cluster barriers relaxed,
# a timing probe, made decode at batch 1 1.0 % faster): k_wg8 (the FP8 linears at decode: wq_a, wkv, wq_b, wo_b, the
# shared expert, the indexer's wq_b) with its parts' sums sent to each output's owner by st.async onto an mbarrier a
# block (no cluster barrier, whose release is a MEMBAR.ALL.GPU), the owner adding them in part order from its own
# shared memory: the same sums, the same bits. DSV4_WG8_ASYNC=0: the barrier (the same binary).
# - the linears alone (bench_kernels --linear-only) at 1 / 16 / 64 tokens, both ways;
# - decode on 8 Flash-shaped layers at batch 1 / 16 / 64, three rounds, both ways;
# - the whole GPU suite (test_ops_cuda's linears bit for bit against the CPU in four configurations, the logits
#   against the base build byte for byte, memchecks), then memcheck on k_wg8 at 1 / 16 / 64 tokens.
# Pack (on the branch): AS=wga BASE=<main's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wga
A0="env DSV4_WG8_ASYNC=0"
call_kernels lin 2 "new=$B/bench_kernels;a0=$A0 $B/bench_kernels" "--linear-only --batch 1,16,64"
call_snap
call_ab 3 "new=$B/bench_cpu --overlap;a0=$A0 $B/bench_cpu --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
sort "$R/ab.txt" | uniq
call_snap
call_verify VERIFY_TIMEOUT=380
timeout 150 compute-sanitizer --tool memcheck --kernel-name kns=k_wg8 --error-exitcode 3 $B/bench_kernels \
  --linear-only --batch 1,16,64 --reps 1 > "$R/san-k_wg8.txt" 2>&1
echo "== memcheck k_wg8 exit $?"; grep "ERROR SUMMARY" "$R/san-k_wg8.txt"
call_end

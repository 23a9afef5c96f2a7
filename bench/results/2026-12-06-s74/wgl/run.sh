#!/bin/sh
# s74 wgl/ (after lpa/: in both wga/ and lpa/ the FP8 wo_b alone at 16 tokens, reference numerics, was 24-27 %
# slower with k_wg8's push - 21.7-22.4 against 17.5-17.7 us - while other shapes gained): k_wg8's push in two forms
# in one binary - late (new: the mbarrier initialised at the end, a relaxed cluster barrier, the slots in the
# ring as wg_store and mma_finish have them) and early (DSV4_WG8_PUSH_EARLY=1: wga/'s form, the slots after the
# weight scales, the mbarrier initialised at the start) - against the barrier (a0: DSV4_LIN_ASYNC=0).
# - test_ops_cuda by default and with wg8's 64-token launches, both forms; the logits against the base build;
# - the linears alone at 1 / 16 / 64 tokens; decode at batch 1 (3 rounds) and 16 (2 rounds); memcheck on k_wg8.
# Pack: AS=wgl BASE=/tmp/base-s74 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wgl
for e in 0 1; do
  DSV4_WG8_PUSH_EARLY=$e timeout 200 $B/test_ops_cuda > "$R/ops-e$e.txt" 2>&1; echo "ops early=$e exit $?"
  DSV4_WG8_PUSH_EARLY=$e DSV4_WG8_CHUNK=64 timeout 200 $B/test_ops_cuda > "$R/ops64-e$e.txt" 2>&1
  echo "ops64 early=$e exit $?"
  gzip -9 -n "$R/ops-e$e.txt" "$R/ops64-e$e.txt"
done
call_bits
call_snap
E1="env DSV4_WG8_PUSH_EARLY=1" A0="env DSV4_LIN_ASYNC=0"
call_kernels lin 2 "new=$B/bench_kernels;early=$E1 $B/bench_kernels;a0=$A0 $B/bench_kernels" \
  "--linear-only --batch 1,16,64"
call_snap
call_ab 3 "new=$B/bench_cpu --overlap;early=$E1 $B/bench_cpu --overlap;a0=$A0 $B/bench_cpu --overlap" "b1:--batch 1"
call_ab 2 "new=$B/bench_cpu --overlap;early=$E1 $B/bench_cpu --overlap;a0=$A0 $B/bench_cpu --overlap" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_snap
call_memcheck k_wg8 "--linear-only --batch 1,16,64 --reps 1"
call_end

#!/bin/sh
# s75 v4/: the K-split linears' st.async exchange (rowdot.cuh cl_push_parts) in 16-byte sends - a thread's run of
# outputs, owned in whole units of 4 (8-byte sends where a thread has 2: k_mma_* at one n tile) - where s74's sent
# a float a st.async (4,096 a block made s75's k_attn_pv push 30 % slower, pvp/). The same sums in the same order:
# the same bits. new = this tree; base = main's 2f599e2d build (s74's scalar sends); a0 = DSV4_LIN_ASYNC=0 (the
# cluster barrier, this binary).
# - test_ops_cuda four ways with the push on (default; mma.cu's streamed linears for every shape; 64-token wg8
#   launches; the prefill kernels for every call), the logits against the base byte for byte, memcheck on k_wg8;
# - the linears alone at 1 / 16 / 64 tokens and decode at batch 1 / 16 / 64, the three builds, two rounds.
# Pack: AS=v4 BASE=/tmp/base-main NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh v4=bench/results/2026-12-06-s75/v4/run.sh (~7 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin v4
for c in "def:" "stream:DSV4_WG8=0 DSV4_MMA_STREAM=2 DSV4_MMA_GPW=3 DSV4_CMP_SERIAL_MAX=1000000 DSV4_MOE_NTT=2" \
  "chunk:DSV4_WG8_CHUNK=64 DSV4_MOE_TILES_Y=2 DSV4_MOE_RB=2" "prefill:DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1"; do
  n=${c%%:*} e=${c#*:}
  timeout 200 env $e $B/test_ops_cuda > "$R/ops-$n.txt" 2>&1
  echo "test_ops_cuda $n exit $?"
  grep -E "FAIL|\[  (PASSED|FAILED)" "$R/ops-$n.txt" | head -5
  gzip -9 -n "$R/ops-$n.txt"
done
call_bits
call_memcheck k_wg8 "--linear-only --batch 1,16,64 --reps 1"
call_snap
A0="env DSV4_LIN_ASYNC=0"
call_kernels lin 2 "new=$B/bench_kernels;base=$B/bench_kernels.base;a0=$A0 $B/bench_kernels" "--linear-only --batch 1,16,64"
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap;a0=$A0 $B/bench_cpu --overlap" "b1:--batch 1" \
  "b16:--batch 16" "b64:--batch 64"
sort "$R/ab.txt" | uniq
call_end

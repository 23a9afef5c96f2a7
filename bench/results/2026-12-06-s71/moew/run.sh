#!/bin/sh
# s71 moew/ (the bundle packed from moew.diff on 827a9bb9, the base build c34e4e77's kernels as *.base): the routed
# experts' FP4 words transposed within each 128-column group in GPU memory (k_fp4_pack: word t of unit u at bytes
# 16t + 4u), so a lane reads its four words of a row with one 16-byte shared load (4 a group instead of 16), stage
# rows 64 bytes for every kernel (k_moe16, k_moe8w, k_moe_wg), and k_moe16's two-row-block reference kernels under
# launch bounds of four blocks an SM (128 registers, no spills: without them ptxas gave 132 / 134). The same sums.
# Checks: test_ops_cuda in the suite's four configurations (default; 16-pair tiles; tiles two a launch and two row
# blocks; the prefill kernels for every call), the logits byte for byte against the base, memcheck on k_moe16. Then
# the experts alone at 1-64 tokens and decode at batch 1 / 16, two rounds each, and a warm 4k prefill, one, against
# the base.
# Pack: AS=moew BASE=<c34e4e77's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin moew
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_ops "moe_experts"
for cfg in "ntt:DSV4_WG8=0 DSV4_MMA_STREAM=2 DSV4_MMA_GPW=3 DSV4_CMP_SERIAL_MAX=1000000 DSV4_MOE_NTT=2" \
  "rb2:DSV4_WG8_CHUNK=64 DSV4_MOE_TILES_Y=2 DSV4_MOE_RB=2" "wg:DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1"; do
  n=${cfg%%:*}
  # shellcheck disable=SC2086 # the settings are words
  env ${cfg#*:} timeout 200 $B/test_ops_cuda > "$R/ops_$n.txt" 2>&1
  echo "test_ops_cuda ($n) exit $?"
  grep -E "FAIL|\[  (PASSED|FAILED)" "$R/ops_$n.txt" | head -8
  gzip -9 -n "$R/ops_$n.txt"
done
call_bits
call_memcheck k_moe16 "--experts-only --batch 1,8 --reps 1"
call_snap
call_kernels experts 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--experts-only --batch 1,4,8,16,64"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_snap
call_prefill 1 "new=$B/bench_cpu;base=$B/bench_cpu.base"
call_end

#!/bin/sh
# s71 moew2/ (the bundle packed from moew2.diff on 188af2d7, c34e4e77's kernels as *.base): moew/'s transposed FP4
# words with launch bounds of four blocks an SM on every k_moe16 reference kernel of one n tile (moew/ had them on
# the two-row-block ones only). ptxas then gives the one-row-block kernels 128 registers (102-104 in moew/, 120-124 in
# the base) and issues every weight and B load of a group before its first MMA, as the base's SASS does; moew/'s
# batch 1 was 3 % slower alone. The experts alone at 1 / 4 / 8 / 16 / 64 tokens and decode at batch 1 / 16 against the
# base. Prepared in s71 (the session's device time ran out); run in s72 with moew/'s checks first (test_ops_cuda in the
# four configurations, the logits, memcheck on k_moe16), then two rounds each.
# Pack: AS=moew2 BASE=<c34e4e77's build-gpu> sh scripts/gpu_pack.sh (moew2.diff applied)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin moew2
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
call_end

#!/bin/sh
# s71 moew2/ (the bundle packed from moew2.diff on 188af2d7, c34e4e77's kernels as *.base): moew/'s transposed FP4
# words with launch bounds of four blocks an SM on every k_moe16 reference kernel of one n tile (moew/ had them on
# the two-row-block ones only). ptxas then gives the one-row-block kernels 128 registers (102-104 in moew/, 120-124 in
# the base) and issues every weight and B load of a group before its first MMA, as the base's SASS does; moew/'s
# batch 1 was 3 % slower alone. The experts alone at 1 / 4 / 8 / 16 tokens and decode at batch 1 / 16 against the
# base, one round; then test_ops_cuda and the logits. Prepared in s71, NOT run (the session's device time ran out):
# with more time, two rounds, and moew/'s four test_ops_cuda configurations and memcheck before landing.
# Pack: AS=moew2 BASE=<c34e4e77's build-gpu> sh scripts/gpu_pack.sh (moew2.diff applied)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin moew2
call_kernels experts 1 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--experts-only --batch 1,4,8,16"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_snap
call_ab 1 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
call_snap
call_ops "moe_experts"
call_bits
call_end

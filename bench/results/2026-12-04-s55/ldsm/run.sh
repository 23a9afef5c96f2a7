#!/bin/sh
# s55 ldsm/: k_moe16's weight words by ldmatrix.x4 (stage_words<.., LDSM>: one instruction for a row's four 32-bit
# shared loads, the same words; the decode loop 306 -> 292 SASS a 2 KB group, registers 120 -> 104 gate / up, 124 ->
# 105 down) where ptxas gives the kernel no more registers (MXFP4, one activation plane, one row block, one n tile),
# on b454fe8. The whole suite with quick memchecks and the logits against b454fe8's build byte for byte
# (gpu_verify.sh); the routed experts alone (bench_kernels --experts-only) at 1 / 2 / 8 / 16 / 64 tokens, new and
# base, two rounds; decode at batch 1 / 4 / 16 / 64, three rounds alternating.
# Pack: BASE=<b454fe8's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ldsm
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_kernels experts 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--experts-only --batch 1,2,8,16,64"
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b16:--batch 16" "b64:--batch 64"
call_end

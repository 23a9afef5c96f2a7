#!/bin/sh
# s56 xring2/: the activation scales through a ring of their own (xring) with two row blocks a block only (RB 2:
# the down projection 130 -> 128 registers, four blocks an SM; the RB 1 kernels' SASS is the base's, byte for
# byte) against b454fe8's build: the whole suite with quick memchecks and the logits byte for byte; the experts
# alone at 1 / 8 / 16 / 64 tokens, new / new with two row blocks everywhere (DSV4_MOE_RB=2: s24 measured it
# 0.3-0.5 % slower at 8-16 with the three-block down) / base, two rounds; decode at batch 1 / 16 / 64 and 16
# with DSV4_MOE_RB=2, three rounds.
# Pack: BASE=<b454fe8's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin xring2
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_kernels experts 2 "new=$B/bench_kernels;rb2=env DSV4_MOE_RB=2 $B/bench_kernels;base=$B/bench_kernels.base" "--experts-only --batch 1,8,16,64"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
call_ab 3 "rb2=env DSV4_MOE_RB=2 $B/bench_cpu --overlap;new=$B/bench_cpu --overlap" "rb-b8:--batch 8" "rb-b16:--batch 16"
call_end

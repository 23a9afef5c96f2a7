#!/bin/sh
# s56 final/: the tree to land (xring2/'s kernels, whose suite passed with the logits byte for byte, and two row
# blocks a block from 5 waves of tiles on: Flash's batch 7 and up, instead of 16 - a host constant) against
# b454fe8's build: decode at batch 1 / 4 / 8 / 16 / 64, three rounds; then two row blocks everywhere
# (DSV4_MOE_RB=2) against the tree's choice at batch 1 / 4, two rounds: where the threshold might go lower.
# Pack: BASE=<b454fe8's build-gpu> KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b4:--batch 4" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
call_ab 2 "rb2=env DSV4_MOE_RB=2 $B/bench_cpu --overlap;new=$B/bench_cpu --overlap" "rb-b1:--batch 1" "rb-b4:--batch 4"
call_end

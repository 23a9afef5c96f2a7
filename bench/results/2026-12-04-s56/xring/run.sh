#!/bin/sh
# s56 xring/: k_moe16's activation scales through the ring (moe_stage_x: the n tile's 8 pairs' scales of a
# group copied with its B, read where the group is summed; before, loaded a group ahead into registers by
# LDG, whose address and result registers ptxas reused, stalling the copies: ncu/) against b454fe8's build:
# the whole suite with quick memchecks and the logits byte for byte (the same sums); the experts alone at
# 1 / 4 / 8 / 16 / 64 tokens, new / base, two rounds; decode at batch 1 / 8 / 16 / 64, three rounds.
# Pack: BASE=<b454fe8's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin xring
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_kernels experts 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--experts-only --batch 1,4,8,16,64"
grep -h "experts (ref.) " "$R"/experts-*.txt | head -40
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
call_end

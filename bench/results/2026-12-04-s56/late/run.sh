#!/bin/sh
# s56 late/ (prepared, NOT run: the session's device time was spent): the one-row-block k_moe16 with its activation
# scales through the ring too (XR for every kernel with B in the ring) and its MXFP4 scale FMAs after every MMA of
# the group (late.diff on 49e5ca2: both m tiles' unit sums kept, a __syncwarp, then the scale table read and the
# FMAs in the same order - the same sums). xring/ took the registers 120 -> 102 with XR alone and ptxas then
# interleaved the FMAs with the MMAs they wait on (6 % slower alone at 1-16 tokens); this keeps the old order
# (SASS: the 16 HMMAs, then the FFMAs) at 96 registers (gate / up, down and the 2-pair tiles' kernels) with no LDG
# in the loop. Against 49e5ca2's build: the whole suite with quick memchecks and the logits byte for byte; the
# experts alone at 1 / 2 / 4 / 6 tokens, new / base, two rounds; decode at batch 1 / 4 / 6 / 16, three rounds.
# Prepare: git apply bench/results/2026-12-04-s56/late/late.diff; BASE=<49e5ca2's build-gpu> KTRACE=1 NOTOK=1 sh
# scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin late
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_kernels experts 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--experts-only --batch 1,2,4,6"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b4:--batch 4" "b6:--batch 6" "b16:--batch 16"
call_end

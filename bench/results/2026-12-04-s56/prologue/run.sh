#!/bin/sh
# s56 prologue/ (prepared, NOT run: the session's device time was spent): k_moe16's tile read with the tile count
# instead of after it (prologue.diff on 6b4b0b3: the exit tests both, a tile holding 1 pair or more, so neither
# load waits for the other - ptxas sank a plain or volatile load below the count's exit). SASS: the two LDGs back
# to back before the exit, one L2 round trip fewer before the first weight copy (ncu/: the prologue 6-10 % of the
# samples at one row block, next/: 5 % at two). Registers: one-row-block kernels unchanged (120 / 124 MXFP4); the
# MXFP4 gate / up with two row blocks spills 12 bytes instead of 8 (tests/cuda/test_kernel_regs.sh fails on it as
# it stands: look at where the spill sits before relaxing anything). Against 6b4b0b3's build: the whole suite with
# quick memchecks and the logits byte for byte; the experts alone at 1 / 4 / 16 / 64 tokens, two rounds; decode at
# batch 1 / 4 / 16 / 64, three rounds.
# Prepare: git apply bench/results/2026-12-04-s56/prologue/prologue.diff; BASE=<6b4b0b3's build-gpu> KTRACE=1
# NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin prologue
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_kernels experts 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--experts-only --batch 1,4,16,64"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b4:--batch 4" "b16:--batch 16" "b64:--batch 64"
call_end

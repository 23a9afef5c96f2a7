#!/bin/sh
# s56 verify/: what s55 left unrun on the GPU (6825e06: the router's plan keyed by its activation quantisation;
# afa1803: cuda_moe_aq, k_route without its unused butterfly, DSV4_QNR_SIDE gone; gpu_bits.sh's 2,100-token
# case on 4 Flash layers, an HCA layer among them) against b454fe8's build (the last GPU-run tree): the whole
# suite with quick memchecks and the logits byte for byte; decode at batch 1 / 16, new / base, two rounds;
# then s55's prepared next/moe-ncu.sh (ncu's warp-state samples by SASS line for k_moe16's gate / up at 1 and
# 16 tokens) on this tree's binary.
# Pack: BASE=<b454fe8's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
call_end
mv "$OUT/r.tgz" "$OUT/r-verify.tgz"
sh bench/results/2026-12-04-s55/next/moe-ncu.sh

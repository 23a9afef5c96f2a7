#!/bin/sh
# s76 opl/: opk/'s pack in the attention's epilogue started wo_a 2.4 us into the attention, but the attention took
# 12.75 us instead of 9.0 (median over the 504 layers of a batch-1 trace) and the pair ended as late: wo_a's
# prefetch of its first stages over the attention's row loads. Here k_attn_one lets wo_a start once its rows are in
# (attn_opack.late), `early` = DSV4_ATTN_OPACK=2 (opk/'s form), `a0` = DSV4_ATTN_OPACK=0 (k_mma_pack as before).
# (Lean: the device time left to s76 was ~290 s; the trigger's place changes no value, opk/ ran the bits.)
# - a node trace of the 64-step decode at batch 1; decode at batch 1 / 16 the three ways, two rounds.
# Pack: AS=opl BASE=/tmp/base-main KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh opl=bench/results/2026-12-06-s76/opl/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin opl
call_trace b1 "--batch 1"
call_ab 2 "new=$B/bench_cpu --overlap;early=env DSV4_ATTN_OPACK=2 $B/bench_cpu --overlap;a0=env DSV4_ATTN_OPACK=0 $B/bench_cpu --overlap" "b1:--batch 1" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_end

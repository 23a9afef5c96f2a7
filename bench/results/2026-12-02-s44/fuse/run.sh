#!/bin/sh
# s44: k_wg8 packs its tokens' FP8 codes itself at decode (wg_fuse: one token tile, a block's codes <= 32 KB):
# the step loses k_wg8_pack's launch and hand-over before each FP8 linear (40 a step on 8 layers; the pack's
# critical-path share ~145 us a step at batch 1 in s40's trace). The same codes: gpu_bits identical expected.
# This call: the whole suite (scripts/gpu_verify.sh: every GPU test, gpu_bits against main's 381561b-era
# build, memcheck), then decode b1 / b16 / b1 at a 4k context new / DSV4_WG8_FUSE=0 / base, 2 rounds
# alternating. Pack: BASE=<main's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin fuse
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh | tail -40
call_ab 2 "new=$B/bench_cpu --overlap;off=env DSV4_WG8_FUSE=0 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b1c4k:--batch 1 --context 4096"
call_end

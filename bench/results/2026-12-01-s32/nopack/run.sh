#!/bin/sh
# An upper bound, not a change: decode at batch 1 and 16 with the activation packs' launches skipped
# (DSV4_NOPACK bits, a throwaway build of 8eb7a27 + exp/nopack: 1 k_wg8_pack, 2 k_moe_pack16, 4 the BF16
# pack, 8 mma.cu's FP8 pack; the linears read stale codes: wrong outputs, the same work) - what fusing each
# pack into its consumer could save at most. 8 Flash layers, reference numerics, prompt 16, 32 steps.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin nopack
b=$B/bench_cpu
AB_BINS="new=$b;wg8=env DSV4_NOPACK=1 $b;moe=env DSV4_NOPACK=2 $b;all=env DSV4_NOPACK=15 $b" \
  AB_REPEAT=4 AB_DECODE=32 timeout 400 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2"
cat $R/ab.txt
call_end

#!/bin/sh
# k_wgf8 at decode (main + the change): FP8 weights with unquantised activations (wo_a in reference numerics,
# every FP8 linear in plain) on wgmma with 8-, 16- and 32-token tiles and a 7-stage ring up to 32 tokens, the
# same chains as mma.cu's k_mma_fp8 / k_mma_fp8s (which took them before; DSV4_WGF8_DECODE=0 still does).
# The suite (memchecks; logits against the base, 8eb7a27's bits), the linears alone with it and without
# (bench_kernels --linear-only: the plain column is this path), decode at batch 1 / 8 / 16 / 32 against the
# base (8 Flash layers, reference numerics, prompt 16, 32 steps, 3 rounds alternating).
# BASE=<a build-gpu of 8eb7a27> sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wgf8-dec
sh scripts/gpu_verify.sh
for v in 0 1; do
  DSV4_WGF8_DECODE=$v timeout 120 $B/bench_kernels --linear-only --batch 1,8,16,32 > $R/lin-dec-$v.txt 2>&1
  echo "== DSV4_WGF8_DECODE=$v"; grep -E "^(wq_a|wq_b|wo_a|wo_b)" $R/lin-dec-$v.txt
done
AB_REPEAT=3 AB_DECODE=32 timeout 250 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16" "b32:--batch 32"
cat $R/ab.txt
call_end

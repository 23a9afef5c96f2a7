#!/bin/sh
# s33 call 1 (prepared in s32 on wip/wgf8-scales; run on it rebased on 54b1b1a, wgf8-scales.diff) wgf8-dec (k_wgf8 with 8-, 16- and
# 32-token tiles for the FP8 linears with unquantised activations up to 32 tokens: wo_a in reference numerics)
# with the block's E8M0 weight scales read into shared memory once, before the PDL wait, as k_wg8 does: in
# wgf8-dec each group's scales came from global memory a group ahead, a round trip behind every group of a
# short loop - the suspected reason it ran at 1.7x mma.cu's time (a wo_a group 13.7 us against 7.3-8.3 at
# batch 1). The suite (memchecks; logits against the base, main's bits), the linears alone with
# DSV4_WGF8_DECODE=0 (mma.cu, the same binary: the switch reads getenv now) and 1 (bench_kernels --linear-only:
# the plain column is this path), decode at batch 1 / 8 / 16 / 32 against the base (8 Flash layers, reference
# numerics, prompt 16, 32 steps, 3 rounds alternating). Keep it only if wo_a's decode steps get faster.
# BASE=<a build-gpu of main (54b1b1a)> sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wgf8-scales
sh scripts/gpu_verify.sh
for v in 0 1; do
  DSV4_WGF8_DECODE=$v timeout 120 $B/bench_kernels --linear-only --batch 1,8,16,32 > $R/lin-dec-$v.txt 2>&1
  echo "== DSV4_WGF8_DECODE=$v"; grep -E "^(wq_a|wq_b|wo_a|wo_b)" $R/lin-dec-$v.txt
done
AB_REPEAT=3 AB_DECODE=32 timeout 250 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16" "b32:--batch 32"
cat $R/ab.txt
call_end

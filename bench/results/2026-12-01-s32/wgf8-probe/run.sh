#!/bin/sh
# A probe (main, no change): wo_a (FP8 weights, BF16 activations as F16 hi + lo: mma.cu's k_mma_fp8s at
# decode) on the prefill's wgmma kernel k_wgf8 (64-token tiles, the same bits) forced at decode with
# DSV4_WGF8=1: the linears alone (bench_kernels --linear-only, the plain column is this path) and decode at
# batch 1 / 16 / 64 (8 Flash layers, reference numerics, prompt 16, 32 steps, 3 rounds alternating).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wgf8-probe
for v in 0 1; do
  DSV4_WGF8=$v timeout 120 $B/bench_kernels --linear-only --batch 1,16,64 > $R/lin-wgf8-$v.txt 2>&1
  echo "== DSV4_WGF8=$v"; grep -E "^(wo_a|wq_b|wo_b)" $R/lin-wgf8-$v.txt
done
b=$B/bench_cpu
AB_BINS="new=$b;wgf8=env DSV4_WGF8=1 $b" AB_REPEAT=3 AB_DECODE=32 timeout 300 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
cat $R/ab.txt
call_end

#!/bin/sh
# s52: k_wg8 lets the kernel after it start once its blocks have passed their wait (griddepcontrol.
# launch_dependents at decode's tiles; DSV4_WG8_TRIG=0: never), with hc_post's mixing in 64-column blocks
# (mix64/) everywhere (m1), after wo_b only (m2) or never (m0) - test_ops_cuda, the logits against 3fcfa4e's
# build (v70's kernels) byte for byte, then decode with trig + m1 (the build's default), trig + m2, trig + m0,
# and neither (v70: DSV4_WG8_TRIG=0 DSV4_HC_POST_MIX64=0), the same binary, two rounds alternating.
# Pack: BASE=<build-gpu of 3fcfa4e> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin trig
timeout 200 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "FAIL|PASSED|FAILED" "$R/ops.txt" | head -8
gzip -9 -n "$R/ops.txt"
BITS_REPEAT=2 sh scripts/gpu_bits.sh
call_ab 2 "t1=$B/bench_cpu --overlap;t2=env DSV4_HC_POST_MIX64=2 $B/bench_cpu --overlap;t0=env DSV4_HC_POST_MIX64=0 $B/bench_cpu --overlap;v70=env DSV4_WG8_TRIG=0 DSV4_HC_POST_MIX64=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
call_end

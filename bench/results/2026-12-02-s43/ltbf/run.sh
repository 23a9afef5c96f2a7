#!/bin/sh
# s43 call 3: --prefill-gemm cublaslt now also takes wo_a (reference numerics' BF16 activations, no_act_quant) as
# one batched BF16 GEMM of its 8 groups (the FP8 weights dequantised to BF16 into scratch at every call). This
# call: test_ops_cuda (its new linear_groups cases), default and with the prefill kernels forced; gpu_bits against
# 584bcea's build (the default path untouched); the 4,096-token prefill ours / cuBLASLt alternating (2 rounds); and
# where that prefill goes op family by op family (bench_cpu --profile) for both. Pack: BASE=<584bcea's build>
# NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ltbf
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|cuBLASLt|PASSED|exit" "$R/ops.txt" | cut -c1-200
grep -E "linear_groups" "$R/ops.txt" | cut -c1-150
DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 timeout 300 $B/test_ops_cuda > "$R/ops-prefill.txt" 2>&1; echo "exit $?" >> "$R/ops-prefill.txt"
grep -E "FAIL|PASSED|exit" "$R/ops-prefill.txt" | cut -c1-200
BITS_REPEAT=1 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for g in ours cublaslt; do
    timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
      --prefill-gemm $g > "$R/pf-$g-$r.txt" 2>&1
    echo "prefill 4096 $g ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$g-$r.txt")"
  done
done
for g in ours cublaslt; do
  timeout 200 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
    --prefill-gemm $g --profile "$R/prof-$g.json" > "$R/prof-$g.txt" 2>&1
  echo "== profile $g"; cat "$R/prof-$g.txt" | head -40
done
call_end

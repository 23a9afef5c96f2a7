#!/bin/sh
# Prepared in s43 on wip/lt-bf16, NOT run: under --prefill-gemm cublaslt the BF16 linears of reference numerics
# (BF16(x) times BF16 weights: the compressors', the indexer's, the router) through lt.cu's BF16 GEMM instead
# of k_wgbf (~150 TFLOP/s: ~5.5 ms of a warm 4k prefill on 8 layers, pftrace/). This call: test_ops_cuda (the
# lt block's BF16 cases, linear_multi against separate calls), gpu_bits against main's build (the default path
# untouched: identical), the warm 4,096-token prefill ours / cuBLASLt / cuBLASLt without the BF16 linears
# (DSV4_LT_BF16=0), 2 rounds. Pack (on wip/lt-bf16): BASE=<main's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
# Merge if the tests pass and cuBLASLt's prefill gains.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ltbf16
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|PASSED|exit" "$R/ops.txt" | cut -c1-200; grep -E "linear BF16 .*act_quant" "$R/ops.txt" | cut -c1-150
BITS_REPEAT=1 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for k in ours lt lt-nobf16; do
    g=cublaslt e=; [ $k = ours ] && g=ours; [ $k = lt-nobf16 ] && e=DSV4_LT_BF16=0
    env $e timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 \
      --decode 2 --warm-prefill --prefill-gemm $g > "$R/pf-$k-$r.txt" 2>&1
    echo "prefill 4096 $k ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$k-$r.txt")"
  done
done
call_end

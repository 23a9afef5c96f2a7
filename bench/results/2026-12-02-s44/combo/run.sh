#!/bin/sh
# s44, one call for s43's two prepared branches merged (wip/kv-store: k_kv_store's rows over blockIdx.y;
# wip/lt-bf16: reference numerics' BF16 linears through lt.cu's BF16 GEMM under --prefill-gemm cublaslt).
# test_ops_cuda, gpu_bits against main's build (c3dcefa: identical expected, the default path's values are
# unchanged), warm 4,096-token prefill new / base for ours and cuBLASLt, cuBLASLt without the BF16 linears
# (DSV4_LT_BF16=0), decode b1 / b16 new / base. Pack: BASE=<main's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin combo
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|PASSED|exit" "$R/ops.txt" | cut -c1-200
BITS_REPEAT=1 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for k in new base new-lt base-lt new-lt-nobf16; do
    b=$B/bench_cpu; case $k in base*) b=$B/bench_cpu.base;; esac
    g=ours; case $k in *lt*) g=cublaslt;; esac
    e=; case $k in *nobf16) e=DSV4_LT_BF16=0;; esac
    env $e timeout 150 $b -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
      --warm-prefill --prefill-gemm $g > "$R/pf-$k-$r.txt" 2>&1
    echo "prefill 4096 $k ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$k-$r.txt")"
  done
done
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
call_end

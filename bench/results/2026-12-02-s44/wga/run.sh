#!/bin/sh
# s44: k_moe_wga - the prefill experts' weights decoded once a block into shared memory (wgmma's A by
# descriptor), tiles of 128 pairs over two warpgroups, two units in flight a warpgroup; the same bits as
# k_moe_wg / k_moe16 expected. This call: test_ops_cuda (k_moe_wga against k_moe16, k_moe_wg and tokens alone),
# gpu_bits against main's c3dcefa build (identical), the warm 4,096-token prefill new / DSV4_MOE_WGA=0 / base,
# ours and cuBLASLt, 2 rounds; bench_kernels' experts at 4,096 tokens new / WGA=0. Pack: BASE=<main's
# build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wga
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|PASSED|exit|differs" "$R/ops.txt" | cut -c1-200 | head -20
BITS_REPEAT=1 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for k in new wg base new-lt wg-lt; do
    b=$B/bench_cpu; case $k in base*) b=$B/bench_cpu.base;; esac
    g=ours; case $k in *lt*) g=cublaslt;; esac
    e=; case $k in wg*) e=DSV4_MOE_WGA=0;; esac
    env $e timeout 150 $b -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
      --warm-prefill --prefill-gemm $g > "$R/pf-$k-$r.txt" 2>&1
    echo "prefill 4096 $k ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$k-$r.txt")"
  done
done
for k in new wg; do
  e=; [ $k = wg ] && e=DSV4_MOE_WGA=0
  env $e timeout 120 $B/bench_kernels --experts-only --batch 1024,4096 > "$R/ek-$k.txt" 2>&1
  echo "experts $k:"; grep -iE "expert|tokens" "$R/ek-$k.txt" | head -8
done
call_end

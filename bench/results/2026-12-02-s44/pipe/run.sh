#!/bin/sh
# s44: k_moe_wg's MXFP4 units two in flight (wait_group 1: a unit's FMAs under the next unit's wgmma; before:
# halves of two units, each half waited for). The same bits expected. This call: test_ops_cuda, gpu_bits against
# main's c3dcefa build (identical), the warm 4,096-token prefill new / DSV4_MOE_WG_PIPE=0 / base, ours and
# cuBLASLt, and new with DSV4_MOE_WGS=2, 2 rounds. Pack: BASE=<main's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pipe
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|PASSED|exit|differs" "$R/ops.txt" | cut -c1-200 | head -20
BITS_REPEAT=1 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for k in new nopipe base new-lt nopipe-lt new-wgs2; do
    b=$B/bench_cpu; case $k in base*) b=$B/bench_cpu.base;; esac
    g=ours; case $k in *lt*) g=cublaslt;; esac
    e=; case $k in nopipe*) e=DSV4_MOE_WG_PIPE=0;; *wgs2) e=DSV4_MOE_WGS=2;; esac
    env $e timeout 150 $b -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
      --warm-prefill --prefill-gemm $g > "$R/pf-$k-$r.txt" 2>&1
    echo "prefill 4096 $k ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$k-$r.txt")"
  done
done
call_end

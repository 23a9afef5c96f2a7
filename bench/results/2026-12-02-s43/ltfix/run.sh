#!/bin/sh
# s43 call 2. lt.cu's widened weight scales per call in scratch (v62 kept them in a cache keyed by the scale
# tensor's address, which served a freed tensor's scales to the next one allocated there: call 1's failed
# cuBLASLt cases and bench_kernels' wo_b error 0.8), the 128-row rule dropped, NaN/Inf cases back; and s42's
# wip/wg8-pipe (k_wg8's two accumulator sets) against it: pipe's binaries ride as *.base. Pack (main with the
# fix; /tmp/pipebin = the same tree with wip/wg8-pipe's wg8.cu): BASE=/tmp/pipebin NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ltfix
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|cuBLASLt|PASSED|exit" "$R/ops.txt" | cut -c1-200
DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 timeout 300 $B/test_ops_cuda > "$R/ops-prefill.txt" 2>&1; echo "exit $?" >> "$R/ops-prefill.txt"
grep -E "FAIL|PASSED|exit" "$R/ops-prefill.txt" | cut -c1-200
grep -E "act_quant|NaN" "$R/ops.txt" | grep -E "n=1[2-9][0-9]|n=200" | cut -c1-150
BITS_REPEAT=2 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits (main vs pipe) exit $?"; cat "$R/bits.txt"
call_kernels lin 1 "main=$B/bench_kernels;pipe=$B/bench_kernels.base" "--linear-only --batch 1,16,1024,4096"
for k in main pipe; do echo "== $k"; grep -E "FP8" "$R/lin-$k-1.txt" | cut -c1-100,150-; done
call_ab 2 "main=$B/bench_cpu --overlap;pipe=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for k in main pipe lt; do
    b=$B/bench_cpu g=ours; [ $k = pipe ] && b=$B/bench_cpu.base; [ $k = lt ] && g=cublaslt
    timeout 150 $b -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
      --prefill-gemm $g > "$R/pf-$k-$r.txt" 2>&1
    echo "prefill 4096 $k ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$k-$r.txt")"
  done
done
call_end

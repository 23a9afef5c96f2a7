#!/bin/sh
# s43 call 8: k_norm_rope_w by default only above 2,048 rows (decode keeps the block kernel: call 7's batch 1
# was 1.483 against 1.463 ms with the warp kernel), forced by DSV4_NORM_ROPE_W=1 in test_ops_cuda's cases. This
# call: test_ops_cuda; gpu_bits against 584bcea's build; decode b1 / b16 against the warp kernel forced
# (DSV4_NORM_ROPE_W=1), one round; the warm 4,096-token prefill ours / cuBLASLt. Pack: BASE=<584bcea's build>
# NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|PASSED|exit" "$R/ops.txt" | cut -c1-200
BITS_REPEAT=0 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for g in ours cublaslt; do
  timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
    --warm-prefill --prefill-gemm $g > "$R/pf-$g.txt" 2>&1
  echo "prefill 4096 $g: $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$g.txt")"
done
call_ab 1 "new=$B/bench_cpu --overlap;w=env DSV4_NORM_ROPE_W=1 $B/bench_cpu --overlap" "b1:--batch 1" "b16:--batch 16"
call_end

#!/bin/sh
# s43 call 6: k_norm_rope_w (norm_rope's rows a warp each, 8 a block; the same bits as the block kernel): the q
# heads' norm + RoPE took 1.5 ms a layer in a 4,096-token prefill (pftrace/). This call: test_ops_cuda (its
# norm_rope cases compare with the three ops bit for bit) and memcheck on the new kernel; gpu_bits against
# 584bcea's build (identical logits expected); the warm 4,096-token prefill new / block kernel
# (DSV4_NORM_ROPE_W=0) / cuBLASLt, and decode b1 / b16 new / block kernel, 2 rounds alternating.
# Pack: BASE=<584bcea's build> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin nrw
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|PASSED|exit" "$R/ops.txt" | cut -c1-200; grep -E "norm_rope" "$R/ops.txt" | cut -c1-150
timeout 200 compute-sanitizer --tool memcheck --kernel-name regex:k_norm_rope --error-exitcode 3 $B/test_ops_cuda \
  > "$R/san-nrw.txt" 2>&1; echo "memcheck exit $?"; grep "ERROR SUMMARY" "$R/san-nrw.txt" | tail -1
BITS_REPEAT=2 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for k in new old lt; do
    g=ours e=1; [ $k = old ] && e=0; [ $k = lt ] && g=cublaslt
    DSV4_NORM_ROPE_W=$e timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random \
      --prompt 4096 --decode 2 --warm-prefill --prefill-gemm $g > "$R/pf-$k-$r.txt" 2>&1
    echo "prefill 4096 $k ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$k-$r.txt")"
  done
done
call_ab 2 "new=$B/bench_cpu --overlap;old=env DSV4_NORM_ROPE_W=0 $B/bench_cpu --overlap" "b1:--batch 1" "b16:--batch 16"
call_end

#!/bin/sh
# s43 call 7. Calls 4 and 6 read their switches (DSV4_LT_WOA=0, DSV4_NORM_ROPE_W=0) through cuda_env_int, which
# takes 0 for "unset": their "off" runs ran the new code too. Both switches are now cuda_env_on's. This call:
# test_ops_cuda (wo_a's BF16 GEMM cases back, norm_rope's warp kernel cases), memcheck on k_norm_rope_w and
# k_lt_*bf16, gpu_bits against 584bcea's build (identical: the default path's new norm_rope kernel keeps the
# bits), and the warm 4,096-token prefill on 8 Flash layers, 2 rounds alternating: ours with k_norm_rope_w /
# without (DSV4_NORM_ROPE_W=0), cuBLASLt with both / without wo_a's BF16 GEMM (DSV4_LT_WOA=0) / without
# k_norm_rope_w; decode b1 / b16 with / without k_norm_rope_w. Pack: BASE=<584bcea's build> NOTOK=1 sh
# scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ab2
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "exit $?" >> "$R/ops.txt"
grep -E "FAIL|PASSED|exit" "$R/ops.txt" | cut -c1-200; grep -E "linear_groups.*no_act|n_tok=(37|13|9|11|6) " "$R/ops.txt" | cut -c1-150
timeout 200 compute-sanitizer --tool memcheck --kernel-name kns=k_norm_rope_w --error-exitcode 3 $B/test_ops_cuda \
  > "$R/san-nrw.txt" 2>&1; echo "memcheck k_norm_rope_w exit $?"; grep "ERROR SUMMARY" "$R/san-nrw.txt" | tail -1
DSV4_LT=1 timeout 200 compute-sanitizer --tool memcheck --kernel-name kns=bf16 --error-exitcode 3 $B/test_ops_cuda \
  > "$R/san-ltbf.txt" 2>&1; echo "memcheck k_lt_*bf16 exit $?"; grep "ERROR SUMMARY" "$R/san-ltbf.txt" | tail -1
BITS_REPEAT=1 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for k in ours ours-nonrw lt lt-nowoa lt-nonrw; do
    g=ours; case $k in lt*) g=cublaslt ;; esac
    e=; case $k in *nonrw) e=DSV4_NORM_ROPE_W=0 ;; *nowoa) e=DSV4_LT_WOA=0 ;; esac
    env $e timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random \
      --prompt 4096 --decode 2 --warm-prefill --prefill-gemm $g > "$R/pf-$k-$r.txt" 2>&1
    echo "prefill 4096 $k ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$k-$r.txt")"
  done
done
call_ab 2 "new=$B/bench_cpu --overlap;nonrw=env DSV4_NORM_ROPE_W=0 $B/bench_cpu --overlap" "b1:--batch 1" "b16:--batch 16"
call_end

#!/bin/sh
# Prepared in s42, NOT run (the device time ran out): the next session's first call. What s42 changed after its
# last device call: lt.cu leaves matrices under 256 rows to wg8.cu, test_ops_cuda's cuBLASLt list as committed
# (a 256-row case with y's rows 260 apart; the 128-row case expecting wg8.cu; skipped under DSV4_WG8=0 /
# DSV4_CUDA_MMA=0), gpu_verify.sh's status from the suite's output, dsv4 run's usage. This call: the whole
# suite (its "suite rc" now fails on a failed test), then the linears with the cuBLASLt column and the
# 4,096-token prefill ours / cuBLASLt alternating (2 rounds). ~330 s. Pack: BASE=<any build since 584bcea: the
# default path's logits must stay identical> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
call_kernels lin 1 "ours=$B/bench_kernels" "--linear-only --batch 1024,4096"
grep -E "FP8" "$R/lin-ours-1.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for g in ours cublaslt; do
    timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
      --prefill-gemm $g > "$R/pf-$g-4096-$r.txt" 2>&1
    echo "prefill 4096 $g ($r): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$g-4096-$r.txt")"
  done
done
call_end

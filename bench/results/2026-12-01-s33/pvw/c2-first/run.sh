#!/bin/sh
# s33 call 2: the weighted sum on wgmma (k_attn_pvw: dsv4 tune's wg64 / wg128), first look. test_ops_cuda (its
# tuned-choice loop compares wg64 and wg128 with the built-in choices bit for bit) and the attention tables
# (bench_kernels --attn-only --batch 16,64) with the built-in choices and with wg.json (walk32/64 -> wg64,
# walk128 -> wg128) and wg128.json (every walk -> wg128), the same binary.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw
D=bench/results/2026-12-01-s33/pvw
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt
grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda.txt | head -20
for v in builtin wg wg128; do
  if [ $v = builtin ]; then T=; else T=$D/$v.json; fi
  DSV4_TUNE=$T timeout 100 $B/bench_kernels --attn-only --batch 16,64 > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "CSA|HCA" $R/attn-$v.txt | head -20
done
gzip -9 -n $R/ops_cuda.txt
call_end

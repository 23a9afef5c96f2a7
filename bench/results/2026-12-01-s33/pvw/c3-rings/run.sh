#!/bin/sh
# s33 call 3: k_attn_pvw's four ring configurations a width (DSV4_PVW=1..4: NA=1 (32,4) (32,8) (64,4) (64,6);
# NA=2 (32,4) (32,6) (64,3) (64,4) as (rows a stage, stages)), the wgmma of a stage in flight across the next
# stage's wait. test_ops_cuda under each (the tuned-choice loop: wg64 / wg128 against the built-in bits; the
# new heads128 scenario: 20 heads of 128), and the attention tables with wg.json beside the built-in choices.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw2
D=bench/results/2026-12-01-s33/pvw
for k in 1 2 3 4; do
  DSV4_PVW=$k timeout 200 $B/test_ops_cuda > $R/ops_cuda-$k.txt 2>&1; echo "exit $?" >> $R/ops_cuda-$k.txt
  echo "== test_ops_cuda DSV4_PVW=$k"; grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda-$k.txt | head -8
  gzip -9 -n $R/ops_cuda-$k.txt
done
timeout 100 $B/bench_kernels --attn-only --batch 16,64 > $R/attn-builtin.txt 2>&1
echo "== builtin"; grep -E "CSA|HCA" $R/attn-builtin.txt | awk '{print $1,$2,$3,$4,$5,$6,$7,$8}'
for k in 1 2 3 4; do
  DSV4_PVW=$k DSV4_TUNE=$D/wg.json timeout 100 $B/bench_kernels --attn-only --batch 16,64 > $R/attn-wg-$k.txt 2>&1
  echo "== wg DSV4_PVW=$k"; grep -E "CSA|HCA" $R/attn-wg-$k.txt | awk '{print $1,$2,$3,$4,$5,$6,$7,$8}'
done
call_end

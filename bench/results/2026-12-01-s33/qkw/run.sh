#!/bin/sh
# (prepared in s33 on wip/qkw, NOT run) the attention's scores on wgmma (k_attn_qkw, DSV4_ATTN_QKW=1: 64 rows a
# block, the 64 heads as M, the rows K-major with their 4-byte pairs permuted into mma.sync's slot order).
# First whether it keeps the bits: test_ops_cuda with it on (the tuned-choice loop compares the 16-row scores
# - k_attn_qk<1>, still mma.sync - and one / k_attn_one against it, bit for bit; the 20-head 128-wide and the
# Flash-shaped scenarios take it), then the attention tables off / on, then decode at 16 / 64 (x 4k) off / on.
# sh scripts/gpu_pack.sh; carry .gpu. Keep it only if the bits hold and the attention gets faster.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin qkw
DSV4_ATTN_QKW=1 timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt
echo "== test_ops_cuda, DSV4_ATTN_QKW=1"; grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda.txt | head -12
gzip -9 -n $R/ops_cuda.txt
for v in 0 1; do
  DSV4_ATTN_QKW=$v timeout 100 $B/bench_kernels --attn-only --batch 16,64 > $R/attn-$v.txt 2>&1
  echo "== DSV4_ATTN_QKW=$v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | awk '{print $1,$2,$3,$4,$5,$6,$7,$8,$9}'
done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="qkw=env DSV4_ATTN_QKW=1 $B/bench_cpu;mma=$B/bench_cpu" timeout 250 sh scripts/gpu_ab.sh "b16:--batch 16" "b64:--batch 64" "b64-4k:--batch 64 --context 4096"
cat $R/ab.txt
call_end

#!/bin/sh
# s34: am_den four pairs a lane at once, and (DSV4_ATTN_ONE_GX=1) k_attn_one's parts' sums through L2 instead of
# distributed shared memory. Bits first (test_ops_cuda with and without GX: `one` against the four kernels bit
# for bit), then the trace build's phases both ways, then the attention at batch 1-2 new / GX / base alternating.
# BASE=/tmp/base34 sh scripts/gpu_pack.sh; xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.trace.xz
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin gx
for gx in 0 1; do
  DSV4_ATTN_ONE_GX=$gx timeout 200 $B/test_ops_cuda > $R/ops_cuda-$gx.txt 2>&1; echo "exit $?" >> $R/ops_cuda-$gx.txt
  echo "== test_ops_cuda GX=$gx"; grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda-$gx.txt | head -12; gzip -9 -n $R/ops_cuda-$gx.txt
done
xz -dc $B/bench_kernels.trace.xz > /tmp/bk.trace && chmod +x /tmp/bk.trace
for gx in 0 1; do
  DSV4_ATTN_ONE_GX=$gx timeout 100 /tmp/bk.trace --attn-only --batch 1 --reps 8 > $R/trace-$gx.txt 2>&1; echo "trace rc=$?"; gzip -9 -n $R/trace-$gx.txt
done
for i in 1 2 3; do
  for v in new gx base; do
    case $v in new) bk="$B/bench_kernels";; gx) bk="env DSV4_ATTN_ONE_GX=1 $B/bench_kernels";; base) bk=$B/bench_kernels.base;; esac
    timeout 100 $bk --attn-only --batch 1,2 > $R/attn-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "^(CSA|HCA)" $R/attn-$v-$i.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}' | tr '\n' ';'; echo
  done
done
call_end

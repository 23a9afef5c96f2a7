#!/bin/sh
# s34: am_den four pairs a lane at once, and (DSV4_ATTN_ONE_PUSH=1) k_attn_one's parts' sums pushed to their owners by st.async (an mbarrier each) instead of
# the second cluster barrier and remote loads. Bits first (test_ops_cuda with and without PUSH: `one` against the four kernels bit
# for bit), then the trace build's phases both ways, then the attention at batch 1-2 new / PUSH / base alternating.
# BASE=/tmp/base34 sh scripts/gpu_pack.sh; xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.trace.xz
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin push
for push in 0 1; do
  DSV4_ATTN_ONE_PUSH=$push timeout 200 $B/test_ops_cuda > $R/ops_cuda-$push.txt 2>&1; echo "exit $?" >> $R/ops_cuda-$push.txt
  echo "== test_ops_cuda PUSH=$push"; grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda-$push.txt | head -12; gzip -9 -n $R/ops_cuda-$push.txt
done
xz -dc $B/bench_kernels.trace.xz > /tmp/bk.trace && chmod +x /tmp/bk.trace
for push in 0 1; do
  DSV4_ATTN_ONE_PUSH=$push timeout 100 /tmp/bk.trace --attn-only --batch 1 --reps 8 > $R/trace-$push.txt 2>&1; echo "trace rc=$?"; gzip -9 -n $R/trace-$push.txt
done
for i in 1 2 3; do
  for v in new push base; do
    case $v in new) bk="$B/bench_kernels";; push) bk="env DSV4_ATTN_ONE_PUSH=1 $B/bench_kernels";; base) bk=$B/bench_kernels.base;; esac
    timeout 100 $bk --attn-only --batch 1,2 > $R/attn-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "^(CSA|HCA)" $R/attn-$v-$i.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}' | tr '\n' ';'; echo
  done
done
call_end

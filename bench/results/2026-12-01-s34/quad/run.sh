#!/bin/sh
# s34: k_attn_one's parts' sums read a column quad a thread (one 16-byte remote load a part instead of two
# 8-byte ones). Bits (test_ops_cuda), the trace build's phases, then the attention at batch 1-2: new / prev (the
# den / q / weights changes alone, bench_kernels.prev.xz) / base (main at the session's start), alternating.
# BASE=/tmp/base34 sh scripts/gpu_pack.sh; xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.trace.xz;
# xz -9 -c <the previous build's bench_kernels> > .gpu/bench_kernels.prev.xz
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin quad
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt
grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda.txt | head -12; gzip -9 -n $R/ops_cuda.txt

xz -dc $B/bench_kernels.prev.xz > /tmp/bk.prev && chmod +x /tmp/bk.prev
# (the trace build left out: the tree with it passed the 64 MiB a call carries)
for i in 1 2 3; do
  for v in new prev base; do
    case $v in new) bk=$B/bench_kernels;; prev) bk=/tmp/bk.prev;; base) bk=$B/bench_kernels.base;; esac
    timeout 100 $bk --attn-only --batch 1,2 > $R/attn-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "^(CSA|HCA)" $R/attn-$v-$i.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}' | tr '\n' ';'; echo
  done
done
call_end

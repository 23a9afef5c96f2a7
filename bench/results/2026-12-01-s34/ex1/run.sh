#!/bin/sh
# s34: k_attn_one's first exchange (each score to its head's owner, each part's maxima to every part) by
# st.async on an mbarrier a part (DSV4_ATTN_ONE_EX1=1) instead of remote stores + a cluster barrier + remote
# loads of the maxima; the mbarrier's init published by a cluster barrier before the PDL wait. Bits first
# (test_ops_cuda with it on and off), then the attention at batch 1-2: ex1 / cur (the same binary) / base
# (f6bb190, BASE=/tmp/cur34), alternating, 3 rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ex1
for x in 1 0; do
  DSV4_ATTN_ONE_EX1=$x timeout 120 $B/test_ops_cuda > $R/ops_cuda-$x.txt 2>&1; echo "exit $?" >> $R/ops_cuda-$x.txt
  echo "== test_ops_cuda EX1=$x"; grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda-$x.txt | head -12; gzip -9 -n $R/ops_cuda-$x.txt
done
for i in 1 2 3; do
  for v in ex1 cur base; do
    case $v in ex1) bk="env DSV4_ATTN_ONE_EX1=1 $B/bench_kernels";; cur) bk=$B/bench_kernels;; base) bk=$B/bench_kernels.base;; esac
    timeout 60 $bk --attn-only --batch 1,2 > $R/attn-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "^(CSA|HCA)" $R/attn-$v-$i.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}' | tr '\n' ';'; echo
  done
done
call_end

#!/bin/sh
# s34: k_attn_md16's max four pairs a lane at once (its loop of guarded global loads paid a round trip a pair),
# new against f6bb190 (BASE=/tmp/cur34): test_ops_cuda for the bits, then the attention at 1-64 tokens
# alternating, 3 rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin md16
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt
grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda.txt | head -12; gzip -9 -n $R/ops_cuda.txt
for i in 1 2 3; do
  for v in new base; do
    case $v in new) bk=$B/bench_kernels;; base) bk=$B/bench_kernels.base;; esac
    timeout 100 $bk --attn-only --batch 4,16,64 > $R/attn-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "^(CSA|HCA)" $R/attn-$v-$i.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}' | tr '\n' ';'; echo
  done
done
call_end

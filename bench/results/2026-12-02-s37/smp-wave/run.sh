#!/bin/sh
# s37 call 6: k_sample's greedy split in one wave (the blocks resident at once shared among the rows;
# DSV4_SMP_WAVE=0: 32 blocks a row as before). Pack: NOTOK=1. test_sample_cuda (the contract at 37 / 4,099 /
# 129,280 ids, rows split 22 ways now; graphs against direct ops), test_overlap on the GPU, the sampler alone
# (bench_kernels --sample-only) both ways, decode both ways at batch 1 / 16 / 64 (2 rounds, overlapped).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin smp-wave
DSV4_SRC=$PWD timeout 300 $B/test_sample_cuda > $R/sample_cuda.txt 2>&1; echo "sample exit $?"
grep -E "agree|bit for bit|PASSED|FAILED" $R/sample_cuda.txt | tail -5
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_overlap > $R/overlap_cuda.txt 2>&1; echo "overlap exit $?"
for v in 1 0; do
  DSV4_SMP_WAVE=$v timeout 100 $B/bench_kernels --sample-only --batch 1,16,64 > $R/sample-wave$v.txt 2>&1
  echo "== wave $v"; grep -iE "sample|batch" $R/sample-wave$v.txt | head -12
done
AB_REPEAT=2 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;old=env DSV4_SMP_WAVE=0 $B/bench_cpu --overlap" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
rm -f $R/ab-*.json
call_end

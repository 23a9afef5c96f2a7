#!/bin/sh
# s39: the indexer's scores kernel (k_idx_score_tc) with dynamic shared memory for the key format it stages (FP4:
# 4.3 KB a tile at 128 dimensions, BF16 16 KB) instead of FP32's 32 KB always: with 44 KB static a block took 76 KB,
# two an SM; three now (162 registers: three is the register file's limit). Base: a build of fb76ddb. This call:
# test_ops_cuda, the indexer alone new / base (bench_kernels --attn-only --batch 1,16), decode new / base at 16 x
# 32k, 16 x 128k and 1 x 4k (2 rounds). Pack: BASE=<fb76ddb build> NOTOK=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin stage
timeout 150 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "PASSED|FAILED" $R/ops.txt | head -3
timeout 60 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-new-1.txt 2>&1
timeout 60 $B/bench_kernels.base --attn-only --batch 1,16 > $R/attn-base-1.txt 2>&1
grep -B1 -A9 "^indexer " $R/attn-new-1.txt | head -12; grep -A9 "FP4 keys" $R/attn-new-1.txt; grep -A9 "FP4 keys" $R/attn-base-1.txt
AB_REPEAT=2 AB_DECODE=32 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" timeout 150 sh scripts/gpu_ab.sh "b16-32k:--batch 16 --context 32768" \
  "b16-128k:--batch 16 --context 131072" "b1-4k:--batch 1 --context 4096"
rm -f $R/ab-*.json
call_end

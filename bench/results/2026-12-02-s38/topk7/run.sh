#!/bin/sh
# s38 call 7 (the committed k_idx_topk with a cheaper first pass: the key of a negative score the complement plus
# one, the shared low zero bits from one OR instead of an OR and an AND; uncommitted; base = 8a1a104):
# test_ops_cuda, memcheck of k_idx_topk (bench_kernels' indexer section), its phases (-DIX_TRACE build,
# .gpu/bench_kernels.ixtrace.xz), the indexer alone new / base, decode new / base at batch 1 with a 4k context,
# 3 rounds. Pack: BASE=<8a1a104's build-gpu> NOTOK=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin topk7
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "indexer_topk, 35|PASSED|FAILED" $R/ops.txt | head
timeout 150 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_topk --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 1,2 --reps 2 > $R/san-memcheck.txt 2>&1
echo "== memcheck exit $?"; grep -E "ERROR SUMMARY" $R/san-memcheck.txt | tail -1
xz -dc $B/bench_kernels.ixtrace.xz > /tmp/bk-ix && chmod +x /tmp/bk-ix
timeout 100 /tmp/bk-ix --attn-only --batch 1 > $R/ixtrace.txt 2>&1; grep -E "ixtrace" $R/ixtrace.txt | head -24
timeout 100 $B/bench_kernels --attn-only --batch 1,2,16 > $R/attn-new.txt 2>&1
timeout 100 $B/bench_kernels.base --attn-only --batch 1,2,16 > $R/attn-base.txt 2>&1
grep -E "top-512" $R/attn-new.txt | head -9; grep -E "top-512" $R/attn-base.txt | head -9
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 120 sh scripts/gpu_ab.sh "b1-4k:--batch 1 --context 4096"
rm -f $R/ab-*.json
call_end

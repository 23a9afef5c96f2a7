#!/bin/sh
# s39, second version of k_idx_topk's small path (small/ measured the first: R = 4 / 8 / 16 keys a thread on eight
# warps; at 4,096 candidates its 16 strided loads a thread and 16 atomics a pass left it even with the general
# path): now four keys a thread always, one 16-byte load where aligned, on 8 / 16 / 32 warps for up to 1,024 /
# 2,048 / 4,096 candidates. DSV4_IX_SMALL=0: the general path (the same-binary baseline). This call: the suite
# (test_ops_cuda's indexer_large: 34,999 candidates - odd, so every other token's scores are off 16 bytes - and
# 1,024 / 1,500 / 2,048 / 3,001 / 4,096 / 4,097, against the CPU and the general path; logits against a main build),
# memcheck on the top-k, the -DIX_TRACE build's stamps, the indexer alone both ways (2 rounds), decode both ways at
# 1 x 4k / 8k / 16k and 16 x 4k (3 rounds). Pack: BASE=<main build> NOTOK=1, and
# xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.ixtrace.xz
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin small2
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
zcat $R/ops_cuda.txt.gz | grep -E "indexer_topk, 34" | head -4
timeout 150 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_topk --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 1,2 --reps 2 > $R/san-memcheck.txt 2>&1
echo "== memcheck exit $?"; grep -E "ERROR SUMMARY" $R/san-memcheck.txt | tail -1
xz -dc $B/bench_kernels.ixtrace.xz > /tmp/bk-ix && chmod +x /tmp/bk-ix
timeout 100 /tmp/bk-ix --attn-only --batch 1 > $R/ixtrace.txt 2>&1; grep -E "ixtrace" $R/ixtrace.txt | awk '{print $2, $3, $4, $5}' | sort | uniq -c | head
grep -E "ixtrace N (1024|4096)" $R/ixtrace.txt | sort -k3,3n | awk 'NR % 4 == 1'
for i in 1 2; do
  timeout 120 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-new-$i.txt 2>&1
  DSV4_IX_SMALL=0 timeout 120 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-off-$i.txt 2>&1
done
grep -A9 "FP4 keys" $R/attn-new-1.txt; grep -A9 "FP4 keys" $R/attn-off-1.txt
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;off=env DSV4_IX_SMALL=0 $B/bench_cpu --overlap" \
  timeout 300 sh scripts/gpu_ab.sh "b1-4k:--batch 1 --context 4096" "b1-8k:--batch 1 --context 8192" \
  "b1-16k:--batch 1 --context 16384" "b16-4k:--batch 16 --context 4096"
rm -f $R/ab-*.json
call_end

#!/bin/sh
# Prepared in s39, NOT run (the device time ran out): wip/topk-small8 - k_idx_topk's small path up to 8,192
# candidates (decode's contexts to 32k): 4,097 to 8,192 on all 32 warps with eight keys a thread (two 16-byte
# loads), the rest as landed in 63224cf. Expected: the indexer alone at 1 x 32k ~13.7 -> ~10-11 us, 16 x 32k
# ~37 -> ~33 (the general path's keys phase and output at 8,192: ~5,000 + ~3,000 cycles of ~17,000); decode at
# 32k likely even (at 16k the top-k was already off the critical path). This call: the suite (test_ops_cuda's
# indexer_large now has 8,192 and 8,193 candidates too), memcheck on the top-k, the -DIX_TRACE stamps, the
# indexer alone with DSV4_IX_SMALL=0 as the same-binary baseline (2 rounds), decode both ways at 1 x 32k, 16 x
# 32k and 1 x 4k (3 rounds). Run from the branch's tree; pack: BASE=<a build of main> NOTOK=1, and
# xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.ixtrace.xz (a -DIX_TRACE build of the branch).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin small8
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
zcat $R/ops_cuda.txt.gz | grep -E "indexer_topk, 34" | head -4
timeout 150 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_topk --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 1,2 --reps 2 > $R/san-memcheck.txt 2>&1
echo "== memcheck exit $?"; grep -E "ERROR SUMMARY" $R/san-memcheck.txt | tail -1
xz -dc $B/bench_kernels.ixtrace.xz > /tmp/bk-ix && chmod +x /tmp/bk-ix
timeout 100 /tmp/bk-ix --attn-only --batch 1 > $R/ixtrace.txt 2>&1
grep -E "ixtrace" $R/ixtrace.txt | sort -k3,3n | awk 'NR % 4 == 1'
for i in 1 2; do
  timeout 120 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-new-$i.txt 2>&1
  DSV4_IX_SMALL=0 timeout 120 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-off-$i.txt 2>&1
done
grep -A9 "FP4 keys" $R/attn-new-1.txt; grep -A9 "FP4 keys" $R/attn-off-1.txt
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;off=env DSV4_IX_SMALL=0 $B/bench_cpu --overlap" \
  timeout 300 sh scripts/gpu_ab.sh "b1-32k:--batch 1 --context 32768" "b16-32k:--batch 16 --context 32768" \
  "b1-4k:--batch 1 --context 4096"
rm -f $R/ab-*.json
call_end

#!/bin/sh
# Prepared in s38, NOT run (the device time ran out): wip/topk-phase1 - k_idx_topk's keys-and-bounds phase by
# selects instead of a branch around each key. In 42a6045's build the compiler put a branch around each key's
# update (the OR of the keys made the block too big to predicate) and issued the iteration's eighth load after
# the first seven keys' stores: a round trip more an iteration (SASS: cuobjdump from PyPI's
# nvidia-cuda-cuobjdump wheel), the phase 2,963 -> 4,492 cycles at 8,192 candidates, 7,876 -> 10,710 at 32,768
# (topk7/). On the branch the eight loads go out together and the stores are predicated, as in 8a1a104.
# Expected: the phase back near 8a1a104's, the same picks. The -DIX_TRACE build also stamps the output's parts
# (per chunk: loads and ballots, the ties' ranks, the places; then the stores and a barrier): where one warp's
# ~4,350 cycles at 1,024 candidates go. Run from the branch's tree:
# pack with BASE=<a build-gpu of main (0e8048c or later)> NOTOK=1 sh scripts/gpu_pack.sh, and
# xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.ixtrace.xz (a -DIX_TRACE build of the branch).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin phase1
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "indexer_topk, 35|PASSED|FAILED" $R/ops.txt | head
timeout 150 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_topk --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 1,2 --reps 2 > $R/san-memcheck.txt 2>&1
echo "== memcheck exit $?"; grep -E "ERROR SUMMARY" $R/san-memcheck.txt | tail -1
xz -dc $B/bench_kernels.ixtrace.xz > /tmp/bk-ix && chmod +x /tmp/bk-ix
timeout 100 /tmp/bk-ix --attn-only --batch 1 > $R/ixtrace.txt 2>&1; grep -E "ixtrace" $R/ixtrace.txt | head -24
for i in 1 2; do
  timeout 100 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-new-$i.txt 2>&1
  timeout 100 $B/bench_kernels.base --attn-only --batch 1,16 > $R/attn-base-$i.txt 2>&1
done
grep -A7 "FP4 keys" $R/attn-new-1.txt; grep -A7 "FP4 keys" $R/attn-base-1.txt
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 200 sh scripts/gpu_ab.sh "b1-4k:--batch 1 --context 4096" "b1-32k:--batch 1 --context 32768"
rm -f $R/ab-*.json
call_end

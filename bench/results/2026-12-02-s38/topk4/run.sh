#!/bin/sh
# s38 call 4 (main + k_idx_topk with fewer barriers and no idle warps' work, uncommitted; base = 8a1a104):
# test_ops_cuda (indexer_large now with a 33,250-candidate sequence), memcheck and racecheck of k_idx_topk
# (bench_kernels' indexer section), its phases (-DIX_TRACE build, .gpu/bench_kernels.ixtrace.xz), the indexer
# alone new / base, the step's nodes at batch 1 with a 4k context, decode new / base at 1 and 16 with 4k and 32k
# contexts and at 1 with the usual prompt, 3 rounds. Pack: BASE=<8a1a104's build-gpu> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin topk
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "indexer|PASSED|FAILED" $R/ops.txt | head
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --kernel-name regex:k_idx_topk --error-exitcode 3 \
    $B/bench_kernels --attn-only --batch 1,2 --reps 2 > $R/san-$tool.txt 2>&1
  echo "== $tool exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $R/san-$tool.txt | tail -2
done
xz -dc $B/bench_kernels.ixtrace.xz > /tmp/bk-ix && chmod +x /tmp/bk-ix
timeout 100 /tmp/bk-ix --attn-only --batch 1 > $R/ixtrace.txt 2>&1; grep -E "ixtrace" $R/ixtrace.txt | head -30
for i in 1 2; do
  timeout 100 $B/bench_kernels --attn-only --batch 1,2,16 > $R/attn-new-$i.txt 2>&1
  timeout 100 $B/bench_kernels.base --attn-only --batch 1,2,16 > $R/attn-base-$i.txt 2>&1
done
grep -E "top-512" $R/attn-new-1.txt | head -9; grep -E "top-512" $R/attn-base-1.txt | head -9
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1 --context 4096"
sh scripts/gpu_ktrace.sh new-b1-4k "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 330 sh scripts/gpu_ab.sh "b1-4k:--batch 1 --context 4096" "b1-32k:--batch 1 --context 32768" \
  "b16-4k:--batch 16 --context 4096" "b1:--batch 1"
rm -f $R/ab-*.json
call_end

#!/bin/sh
# s40 call 1: (1) k_mma_fp8s (decode's FP8 linears with unquantised activations at 1-8 tokens: wo_a) with both
# steps of a ring stage summed side by side - two steps' MMA chains interleaved where one warp's instruction
# latency bounds the loop; the same sums in the same order (logits byte for byte against main's build); (2) s39's
# prepared wip/topk-small8 (the top-k's small path to 8,192 candidates), applied on main. The suite (bits against
# .base = main), memcheck on the top-k and on k_mma_fp8s, the -DIX_TRACE stamps, the indexer alone both ways,
# a node trace at batch 1, decode new / DSV4_IX_SMALL=0 / base alternating.
# Pack: BASE=<main's build> NOTOK=1 KTRACE=1, and xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.ixtrace.xz.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin fp8s
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
zcat $R/ops_cuda.txt.gz | grep -E "indexer_topk, (34|81)" | head -4
timeout 150 compute-sanitizer --tool memcheck --kernel-name kns=k_idx_topk --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 1,2 --reps 2 > $R/san-memcheck.txt 2>&1
echo "== memcheck topk exit $?"; grep -E "ERROR SUMMARY" $R/san-memcheck.txt | tail -1
d=$(mktemp -d) && $B/dsv4 mkmodel --preset flash --layers 2 --sparse -o $d/f2 > /dev/null 2>&1
DSV4_MMA_STREAM=2 timeout 200 compute-sanitizer --tool memcheck --kernel-name kns=k_mma_fp8s --error-exitcode 3 \
  $B/bench_cpu -m $d/f2 --backend cuda --numerics reference --fill-random --prompt 16 --decode 2 --batch 3 \
  > $R/san-fp8s.txt 2>&1
echo "== memcheck fp8s exit $?"; grep -E "ERROR SUMMARY" $R/san-fp8s.txt | tail -1
xz -dc $B/bench_kernels.ixtrace.xz > /tmp/bk-ix && chmod +x /tmp/bk-ix
timeout 100 /tmp/bk-ix --attn-only --batch 1 > $R/ixtrace.txt 2>&1
grep -E "ixtrace" $R/ixtrace.txt | sort -k3,3n | awk 'NR % 4 == 1'
timeout 120 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-new.txt 2>&1
DSV4_IX_SMALL=0 timeout 120 $B/bench_kernels --attn-only --batch 1,16 > $R/attn-off.txt 2>&1
grep -A9 "FP4 keys" $R/attn-new.txt; grep -A9 "FP4 keys" $R/attn-off.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 64 --batch 1 --overlap"
grep -E "k_mma_fp8s" $R/kt-new-b1.txt | head -3
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 250 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
AB_REPEAT=1 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;off=env DSV4_IX_SMALL=0 $B/bench_cpu --overlap" \
  timeout 120 sh scripts/gpu_ab.sh "b1-32k:--batch 1 --context 32768" "b16-32k:--batch 16 --context 32768"
rm -f $R/ab-*.json
call_end

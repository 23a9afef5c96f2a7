#!/bin/sh
# s76 opk/: wo_a's activation pack in the attention's epilogue (k_attn_one: attn_next / cuda_opack_take), so that
# wo_a's k_mma_fp8s is launched right behind the attention and streams its weights under it (s75 pdl/: a kernel two
# PDL launches behind another starts only when that one has ended; its pack had kept wo_a behind the attention).
# - test_ops_cuda; the logits against the base build (main before it) byte for byte, decode steps included
#   (prefill 12 of 41, 2,080 of 2,100); test_gpu_vs_cpu and test_golden;
# - a node trace of the 64-step decode at batch 1 (wo_a's start against the attention's end);
# - decode at batch 1 / 16, the tree against DSV4_ATTN_OPACK=0 (k_mma_pack as before), two rounds.
# Pack: AS=opk BASE=/tmp/base-main KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh opk=bench/results/2026-12-06-s76/opk/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin opk
timeout 200 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "test_ops_cuda exit $?"
grep -E "FAIL|\[  (PASSED|FAILED)" "$R/ops.txt" | head -5
gzip -9 -n "$R/ops.txt"
call_bits
for t in test_gpu_vs_cpu test_golden; do
  timeout 200 $B/$t > "$R/$t.txt" 2>&1
  echo "$t exit $?"
  grep -E "\[  (PASSED|FAILED)" "$R/$t.txt"
  gzip -9 -n "$R/$t.txt"
done
call_trace b1 "--batch 1"
call_ab 2 "new=$B/bench_cpu --overlap;a0=env DSV4_ATTN_OPACK=0 $B/bench_cpu --overlap" "b1:--batch 1" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_end

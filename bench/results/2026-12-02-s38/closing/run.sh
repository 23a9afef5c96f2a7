#!/bin/sh
# s38 call 6 (the k_idx_topk commit's tree: call 5's kernel without the staged output, the warps' bucket sums by
# shuffles): the suite (with the base's logits byte for byte), racecheck of k_idx_topk over bench_kernels' indexer
# section and over test_ops_cuda (the base's too where the new one reports anything), the indexer alone new /
# base, decode new / base at batch 1 with 4k and 32k contexts, 3 rounds. Pack: BASE=<8a1a104's build-gpu>
# NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin closing
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
san() { # NAME BINARY ARGS...
  n=$1; shift
  timeout 200 compute-sanitizer --tool racecheck --kernel-name kns=k_idx_topk --error-exitcode 3 "$@" > $R/race-$n.txt 2>&1
  rc=$?; echo "== racecheck $n exit $rc"; grep -E "RACECHECK SUMMARY|Internal|PASSED|FAILED" $R/race-$n.txt | tail -3
  return $rc
}
san bk $B/bench_kernels --attn-only --batch 1,2 --reps 2 || san bk-base $B/bench_kernels.base --attn-only --batch 1,2 --reps 2
san ops $B/test_ops_cuda
timeout 100 $B/bench_kernels --attn-only --batch 1,2,16 > $R/attn-new.txt 2>&1
timeout 100 $B/bench_kernels.base --attn-only --batch 1,2,16 > $R/attn-base.txt 2>&1
grep -E "top-512" $R/attn-new.txt | head -9; grep -E "top-512" $R/attn-base.txt | head -9
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  timeout 200 sh scripts/gpu_ab.sh "b1-4k:--batch 1 --context 4096" "b1-32k:--batch 1 --context 32768"
rm -f $R/ab-*.json
call_end

#!/bin/sh
# s26 call 4: main (41e24c8 + e303340: k_mma_fp8's ring, k_wg8's scale prologue) with k_attn_one's second
# version (call 3's profile: the scores' and the weighted sum's fragment loads each waited before its MMA,
# the parts' sums one remote load group at a time; now a step's fragments loaded during the step before's
# MMAs, eight B fragments then their MMAs, four pairs' remote loads in flight). The suite with one.json
# (the engine's tests and memchecks take "one"; test_ops_cuda compares every choice bit for bit) and the
# logits against 7dec4dd's build (*.base); the attention table with and without one.json; decode new / base /
# new with one.json at batch 1 / 8 / 16 / 64 (2 rounds, alternating)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
ONE=$PWD/bench/results/2026-12-01-s26/one.json
DSV4_TUNE=$ONE TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|not used|differ" $R/suite.txt | head -50
for v in one auto; do
  c=$B/bench_kernels; [ $v = one ] && c="env DSV4_TUNE=$ONE $B/bench_kernels"
  timeout 100 $c --attn-only --batch 1,16,64 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)|choices" $R/attn-$v.txt
done
AB_REPEAT=2 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;base=$B/bench_cpu.base;one=env DSV4_TUNE=$ONE $B/bench_cpu" timeout 300 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda ep_cuda sanitizer; do
  [ -f $R/$f.txt ] && gzip -9 -n $R/$f.txt; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# s27 call 1: wip/one-den + wip/lin-flush-ev merged (wip/s27-combo) against main at 6747071 (*.base).
# The suite with memchecks (test_ops_cuda compares every attention choice bit for bit; the logits against
# main's); the logits with one.json; the attention table at batch 1: new with one.json (k_attn_one storing
# scores at the owners), new with the built-in choices (the four kernels), base with one.json (k_attn_one as
# at main); decode at batch 1 with one1.json (new, base) and without (3 rounds alternating)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|differ" $R/suite.txt | head -50
ONE=$PWD/bench/results/2026-12-01-s26/one.json
ONE1=$PWD/bench/results/2026-12-01-s26/one1.json
mv $R/bits.txt $R/bits-auto.txt 2>/dev/null
DSV4_TUNE=$ONE sh scripts/gpu_bits.sh; mv $R/bits.txt $R/bits-one.txt
for v in one auto one-base; do
  case $v in
    one) c="env DSV4_TUNE=$ONE $B/bench_kernels" ;;
    auto) c=$B/bench_kernels ;;
    one-base) c="env DSV4_TUNE=$ONE $B/bench_kernels.base" ;;
  esac
  timeout 60 $c --attn-only --batch 1 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | awk '{print $1,$2,$3,$4,$5,$7}'
done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="one1=env DSV4_TUNE=$ONE1 $B/bench_cpu;auto=$B/bench_cpu;base1=env DSV4_TUNE=$ONE1 $B/bench_cpu.base" \
  timeout 150 sh scripts/gpu_ab.sh "b1:--batch 1"
cat $R/ab.txt
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda ep_cuda sanitizer; do
  [ -f $R/$f.txt ] && gzip -9 -n $R/$f.txt; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

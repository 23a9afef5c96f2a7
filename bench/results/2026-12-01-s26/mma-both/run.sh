#!/bin/sh
# (prepared in s25, not run: no device time left) wip/mma-both = wip/mma-fp8-ring + wip/fp8s-issue +
# wip/wg8-scales on main: k_mma_fp8 with hi + lo activations at one or two n tiles through its ring (XR),
# k_mma_fp8s's issue side without per-copy address arithmetic, k_wg8's weight-scale prologue with its loads in
# flight together. Pack with BASE=<a build-gpu of main> (the same bits are expected: logits
# byte for byte). The suite with a memcheck of Flash's shapes; ncu durations of k_mma_fp8s at batch 1 / 8, of
# k_mma_fp8 at batch 12 / 16 (wo_a) and of k_wg8 at batch 1 / 16 (wq_b, wo_b, ...), new / base; decode new / base at batch 1 / 8 / 16 alternating (3 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/rb; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
for kb in "k_mma_fp8s 1" "k_mma_fp8s 8" "k_mma_fp8 12" "k_mma_fp8 16" "k_wg8 1" "k_wg8 16"; do set -- $kb
  for v in new base; do
    bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
    timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size -k regex:"^$1\$" \
      --launch-skip 8 --launch-count 16 $bin -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 1 \
      --decode 4 --batch $2 --no-graphs > $R/dur-$1-$v-b$2.txt 2>&1
    echo "== $1 $v b$2: $(grep -E "gpu__time_duration" $R/dur-$1-$v-b$2.txt | awk '{s+=$NF; n++} END {print "mean us", s/n, "n", n}')"
  done
done
AB_REPEAT=3 AB_DECODE=32 timeout 240 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda ep_cuda sanitizer; do
  [ -f $R/$f.txt ] && gzip -9 -n $R/$f.txt; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

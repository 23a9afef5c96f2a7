#!/bin/sh
# call 1: 57e2ac9 (the review mend of c96a2d4: lin_parts_sum, wg_q, cuda_linear_to_post through
# cuda_linear_wg8; device code the same instructions, the host refactor not yet GPU-run) against c9a9cc1 (*.base):
# the suite with a memcheck of Flash's shapes, logits byte for byte. And a measurement (probe/, the build of
# wip/attn-pv-probe on 57e2ac9): DSV4_ATTN_PROBE=1 launches k_attn_pv's parts layout without its 8-block cluster,
# each part storing over the others (wrong results; the time without the cluster's sum): bench_kernels
# --attn-only at batch 1 / 8 with and without the knob, three runs alternating; decode new / probe / base at
# batch 1 / 8.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
mkdir -p $B/probe && tar xJf $B/probe.tar.xz -C $B/probe
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -50
grep -h "linear_to_post" $R/ops_cuda*.txt | head -8
for i in 1 2 3; do for v in 0 1; do
  DSV4_ATTN_PROBE=$v timeout 60 $B/probe/bench_kernels --attn-only --batch 1,8 > $R/attn-p$v-$i.txt 2>&1
  echo "== probe $v run $i"; grep -viE "^#|^$" $R/attn-p$v-$i.txt | head -12 | cut -c1-110
done; done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;probe=env DSV4_ATTN_PROBE=1 $B/probe/bench_cpu;base=$B/bench_cpu.base" \
  timeout 220 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

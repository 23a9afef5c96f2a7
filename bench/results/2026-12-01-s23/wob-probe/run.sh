#!/bin/sh
# call 4 (measurement only): what wo_b's cluster costs. DSV4_WG8_PROBE=1 (this build only, probe.diff) launches
# k_wg8's one-part-a-block shapes (wo_b at batch 1-16: 8 parts) without the cluster and stores each part's sums
# over the others (wrong results; the time without the cluster sum). bench_kernels' linears at batch 1 / 8 / 16
# with and without the probe, three runs alternating; decode at batch 1 / 8 likewise (its routing changes with
# the wrong wo_b: the experts' time with it). And whether nsys is on the machine.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
(command -v nsys; ls -d /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems* 2>/dev/null) > $R/nsys.txt 2>&1; echo "nsys: $(cat $R/nsys.txt | tr '\n' ' ')"
for i in 1 2 3; do for v in 0 1; do
  DSV4_WG8_PROBE=$v timeout 60 $B/bench_kernels --linear-only --batch 1,8,16 > $R/lin-p$v-$i.txt 2>&1
  echo "== probe $v run $i"; grep -E "^(wq_b|wo_b) " $R/lin-p$v-$i.txt | cut -c1-80
done; done
OUT_SAVE=$OUT; export OUT=$R
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;probe=env DSV4_WG8_PROBE=1 $B/bench_cpu" timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

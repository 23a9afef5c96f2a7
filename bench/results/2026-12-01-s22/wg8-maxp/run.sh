#!/bin/sh
# call 8: k_wg8's parts along K capped (DSV4_WG8_MAXP: 8, the built-in, 4, 2) - wo_b at batch 1 runs its
# 8 parts as clusters of 8 and takes 19.7 us against wq_b's 13.2 for the same bytes (fp8s-xs/'s linear table):
# the linear tables at batch 1 / 16 per cap, the suite with the cap at 4 (other sums: the GPU-vs-CPU tests),
# decode at batch 1 / 16 / 64 with the cap at 8 and 4 alternating (2 at batch 1)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
for p in 8 4 2; do
  DSV4_WG8_MAXP=$p timeout 90 $B/bench_kernels --linear-only --batch 1,16 > $R/lin-p$p.txt 2>&1
  echo "== cap $p"; grep -E "\(FP8\)" $R/lin-p$p.txt | cut -c1-92 | head -20
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 p=$2 b=$3
  DSV4_WG8_MAXP=$p timeout 60 $B/bench_cpu -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for b in 1 16 64; do for p in 4 8; do run b$b-p$p-$i $p $b; done; done
  run b1-p2-$i 2 1
done
OUT_SAVE=$OUT; export OUT=$R
DSV4_WG8_MAXP=4 TIMINGS=0 SANITIZE=0 timeout 240 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

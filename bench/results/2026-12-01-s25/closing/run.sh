#!/bin/sh
# call 7: the head (58fff2b, the build verify/ ran the suite on): decode at batch 1 / 8 / 16 / 64 and
# 16 x 128k (two runs each), a 4,096-token prefill (two), dsv4 serve on 8 Flash layers driven by dsv4 bench
# at concurrency 1 / 8 / 16 / 64
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $R/machine.txt 2>&1
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2; do for c in "1 0" "8 0" "16 0" "64 0" "16 131072"; do set -- $c
  cx=; [ $2 -gt 0 ] && cx="--context $2"
  timeout 60 $B/bench_cpu $BC --prompt 16 --decode 32 --batch $1 $cx > $R/d$1-c$2-$i.txt 2>&1
  echo "d$1-c$2-$i: $(grep -m1 '^model ' $R/d$1-c$2-$i.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
done; done
for i in 1 2; do
  timeout 60 $B/bench_cpu $BC --prompt 4096 --decode 2 > $R/pf-$i.txt 2>&1; echo "pf-$i: $(grep -m1 '^model' $R/pf-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
done
OUT_SAVE=$OUT; export OUT=$R
TESTS=0 SANITIZE=0 KERNELS=0 FIXTURES=0 SERVE_FLASH=1 SERVE_LAYERS=8 timeout 220 sh scripts/gpu_suite.sh > $R/serve.txt 2>&1; echo "serve rc=$?"
grep -A1 "conc" $R/serve.txt | grep -v "^--" | grep -v conc
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

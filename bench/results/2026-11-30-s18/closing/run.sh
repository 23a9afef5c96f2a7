#!/bin/sh
# call 7: the head's code (aa06163: the experts' interleaved K parts): decode steps at batch 1 / 8 / 16 / 64
# (three runs each), a 4,096-token prefill (two), the op-by-op profile of a batch-16 step, ncu's per-kernel
# table of a batch-16 step, and dsv4 serve on 8 Flash layers driven by dsv4 bench at concurrency 1 / 8 / 16 / 64
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2 3; do for b in 1 8 16 64; do
  timeout 40 $B/bench_cpu $BC --prompt 16 --decode 32 --batch $b > $R/d$b-$i.txt 2>&1; echo "d$b-$i: $(grep -m1 '^model ' $R/d$b-$i.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
done; done
for i in 1 2; do
  timeout 60 $B/bench_cpu $BC --prompt 4096 --decode 2 > $R/pf-$i.txt 2>&1; echo "pf-$i: $(grep -m1 '^model' $R/pf-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
done
timeout 60 $B/bench_cpu $BC --prompt 16 --decode 16 --batch 16 --profile $R/d16-profile.json --profile-steps 16 > $R/d16-profile.txt 2>&1
sed -n '/^decode:/,/^prefill/p' $R/d16-profile.txt
timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $B/bench_cpu $BC --prompt 1 --decode 2 --batch 16 --no-graphs > $R/ncu16.txt 2>&1
python3 bench/ncu_kernel_table.py --steps 3 $R/ncu16.txt > $R/ncu16-table.txt 2>&1; head -25 $R/ncu16-table.txt
gzip -f $R/ncu16.txt
OUT_SAVE=$OUT; export OUT=$R
TESTS=0 SANITIZE=0 KERNELS=0 FIXTURES=0 SERVE_FLASH=1 SERVE_LAYERS=8 timeout 220 sh scripts/gpu_suite.sh > $R/serve.txt 2>&1; echo "serve rc=$?"
grep -A1 "conc" $R/serve.txt | grep -v "^--" | grep -v conc
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# k_wgbf / k_wgf8 ring stages (two or three blocks an SM): kernels and prefill
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r10; rm -rf $R; mkdir -p $R; touch $R/.start
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
for s in 2 3 4; do
  DSV4_WGF8_S=$s DSV4_WGBF_S=$s timeout 200 $B/bench_kernels --linear-only --batch 4096 --reps 10 > $R/gemm-s$s.txt 2>&1
  grep -E "wo_a|wq_b|BF16" $R/gemm-s$s.txt | grep -v "lm head" | cut -c1-62 | sed "s/^/S=$s /"
  DSV4_WGF8_S=$s DSV4_WGBF_S=$s timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --fill-random --numerics reference > $R/pf-s$s.txt 2>&1
  echo "pf S=$s: $(grep -m1 '^model ' $R/pf-s$s.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

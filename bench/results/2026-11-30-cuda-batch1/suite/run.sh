#!/bin/sh
# the session's suite call (code of 01d5440 less its last BF16-kernel change): bits against the base
# build, every GPU test + quick sanitizers, kernels, decode steps with --profile
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/final; rm -rf $R; mkdir -p $R; touch $R/.start
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/machine.txt 2>&1
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 >/dev/null 2>&1
ids=$(seq -s, 3 43)
for num in reference plain; do
  for pf in 41 12; do
    for bin in dsv4 dsv4.base; do
      $B/$bin logits -m /tmp/f2 --fill-random --backend cuda --numerics $num --ids $ids --prefill $pf -o /tmp/l-$bin-$num-$pf.bin 2>>$R/logits.err
    done
    if cmp -s /tmp/l-dsv4-$num-$pf.bin /tmp/l-dsv4.base-$num-$pf.bin; then r=identical; else r=DIFFERENT; fi
    echo "logits $num prefill $pf (41 tokens, 2 Flash layers, --fill-random): $r" | tee -a $R/bits.txt
  done
done
OUT_SAVE=$OUT
OUT=$R SANITIZE=quick TIMINGS=0 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1
OUT=$OUT_SAVE
timeout 200 $B/bench_kernels --json $R/kernels.json > $R/kernels.txt 2>&1
timeout 40 stdbuf -oL $B/bench_kernels.base > $R/kernels-base-linear.txt 2>&1
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
for bs in 1 8 16 64; do
  timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch $bs --backend cuda --numerics reference --fill-random --json $R/bench-flash-b$bs.json --profile $R/profile-flash-b$bs.json --profile-steps 3 > $R/bench-flash-b$bs.txt 2>&1
  timeout 150 $B/bench_cpu.base -m /tmp/f8 --prompt 16 --decode 16 --batch $bs --backend cuda --numerics reference --fill-random --json $R/bench-flash-b$bs-base.json > $R/bench-flash-b$bs-base.txt 2>&1
done
cd $R && tar czf $OUT/final.tgz $(find . -type f -newer .start)

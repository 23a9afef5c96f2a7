#!/bin/sh
# 48a76e2 against 01d5440: bits, then 8 Flash layers decode at batch 1 / 8 / 16 / 64, each timed twice, alternating
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/last; rm -rf $R; mkdir -p $R; touch $R/.start
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
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { # name binary args...
  n=$1; b=$2; shift 2
  timeout 150 $B/$b -m /tmp/f8 --prompt 16 --decode 32 --backend cuda --numerics reference --fill-random "$@" --json $R/bench-$n.json > $R/bench-$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/bench-$n.txt | sed 's/.*decode 32 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for rep in 1 2; do
  for bs in 1 8 16 64; do
    run flash-b$bs-$rep bench_cpu --batch $bs
    run flash-b$bs-base-$rep bench_cpu.base --batch $bs
  done
done
run flash-b1-c131072 bench_cpu --batch 1 --context 131072
run flash-b16-c131072 bench_cpu --batch 16 --context 131072
cd $R && tar czf $OUT/last.tgz $(find . -type f -newer .start)

#!/bin/sh
# after the BF16 kernel's single-job specialisation: bits, the op and golden tests, kernels, decode steps
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/final3; rm -rf $R; mkdir -p $R; touch $R/.start
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
$B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops rc=$?" | tee -a $R/tests.txt
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda $B/test_golden > $R/golden_cuda.txt 2>&1; echo "golden rc=$?" | tee -a $R/tests.txt
timeout 200 $B/bench_kernels --linear-only --json $R/linear.json > $R/linear.txt 2>&1
timeout 40 stdbuf -oL $B/bench_kernels.base > $R/kernels-base-linear.txt 2>&1
grep -E "lm head" $R/linear.txt | head -2
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
for bs in 1 8 16 64; do
  timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch $bs --backend cuda --numerics reference --fill-random --json $R/bench-flash-b$bs.json > $R/bench-flash-b$bs.txt 2>&1
  timeout 150 $B/bench_cpu.base -m /tmp/f8 --prompt 16 --decode 16 --batch $bs --backend cuda --numerics reference --fill-random --json $R/bench-flash-b$bs-base.json > $R/bench-flash-b$bs-base.txt 2>&1
  echo "b$bs: $(grep -m1 '^model ' $R/bench-flash-b$bs.txt | sed 's/.*decode 16 steps: //; s/ (graphs.*//') | base: $(grep -m1 '^model ' $R/bench-flash-b$bs-base.txt | sed 's/.*decode 16 steps: //; s/ (graphs.*//')"
done
cd $R && tar czf $OUT/final3.tgz $(find . -type f -newer .start)

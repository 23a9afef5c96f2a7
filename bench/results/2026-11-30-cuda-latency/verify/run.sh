#!/bin/sh
# first call of the session, at 0002900: bits against 01d5440 (the last commit run on a GPU before), every
# GPU test (4 commits after 01d5440 changed CUDA code, compile-checked only), long-context decode
# (bench_cpu --context), an ncu survey of one decode step at 16 and 32k contexts
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/verify; rm -rf $R; mkdir -p $R; touch $R/.start
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
DSV4_SRC=$PWD $B/test_gpu_vs_cpu > $R/gpu_vs_cpu.txt 2>&1; echo "gpu_vs_cpu rc=$?" | tee -a $R/tests.txt
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda $B/test_ep > $R/ep.txt 2>&1; echo "ep rc=$?" | tee -a $R/tests.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { # name args...
  n=$1; shift
  timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random "$@" --json $R/bench-$n.json > $R/bench-$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/bench-$n.txt | sed 's/.*decode 16 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
run b1 --batch 1
timeout 150 $B/bench_cpu.base -m /tmp/f8 --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch 1 > $R/bench-b1-base.txt 2>&1; echo "b1 base 01d5440: $(grep -m1 "^model " $R/bench-b1-base.txt | sed "s/.*decode 16 steps: //; s/ (graphs.*//")" | tee -a $R/summary.txt
run b1-c4k --batch 1 --context 4096
run b1-c32k --batch 1 --context 32768
run b1-c128k --batch 1 --context 131072
run b16 --batch 16
run b16-c32k --batch 16 --context 32768
run b16-c128k --batch 16 --context 131072
run b64-c32k --batch 64 --context 32768
# per-kernel durations of one decode step (isolated), batch 1 at 16 and 32k contexts
for c in 16 32768; do
  timeout 200 ncu --graph-profiling node --metrics gpu__time_duration.sum --csv $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 2 --batch 1 --context $c --backend cuda --numerics reference --fill-random > $R/ncu-b1-c$c.csv 2>&1
  echo "ncu c$c rc=$?" >> $R/tests.txt
done
gzip $R/ncu-*.csv
cd $R && tar czf $OUT/verify.tgz $(find . -type f -newer .start)

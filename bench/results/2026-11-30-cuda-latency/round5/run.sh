#!/bin/sh
# round 5 (48a76e2 before its k_expert_sum rewrite was taken out again): bits against 01d5440, every GPU test, decode, ncu
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
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
grep -E "FAIL|o1 \+ o2|PASSED" $R/ops_cuda.txt | head -10
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { # name binary args...
  n=$1; b=$2; shift 2
  timeout 150 $B/$b -m /tmp/f8 --prompt 16 --decode 32 --backend cuda --numerics reference --fill-random "$@" --json $R/bench-$n.json > $R/bench-$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/bench-$n.txt | sed 's/.*decode 32 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for bs in 1 8 16 64; do
  run b$bs bench_cpu --batch $bs
  run b$bs-base bench_cpu.base --batch $bs
done
run b1-again bench_cpu --batch 1
run b1-base-again bench_cpu.base --batch 1
run b1-plain bench_cpu --batch 1 --numerics plain
timeout 200 ncu --graph-profiling node --metrics gpu__time_duration.sum --csv $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 2 --batch 1 --backend cuda --numerics reference --fill-random > $R/ncu-b1.csv 2>&1
gzip $R/ncu-*.csv
cd $R && tar czf $OUT/r5.tgz $(find . -type f -newer .start)

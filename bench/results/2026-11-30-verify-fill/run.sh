#!/bin/sh
# first call of the ninth session: bits against 01d5440, every GPU test (cd4464b, 43f4ee2, b1cbcc8, 807cb38
# changed CUDA code compile-checked only), memcheck over a filled skip, long-context decode with filled rows
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; OUT=$R sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
t() { n=$1; shift; timeout 200 "$@" > $R/$n.txt 2>&1; echo "$n rc=$?" | tee -a $R/tests.txt; }
t ops_cuda $B/test_ops_cuda
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t golden_cuda $B/test_golden
DSV4_SRC=$PWD t gpu_vs_cpu $B/test_gpu_vs_cpu
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t ep $B/test_ep
DSV4_SRC=$PWD t sample_cuda $B/test_sample_cuda
t memcheck-skip compute-sanitizer --tool memcheck --error-exitcode 3 $B/bench_cpu -m tests/fixtures/q_stock --prompt 8 --decode 4 --batch 3 --context 3000 --backend cuda
grep -E "fill|FAIL" $R/ops_cuda.txt | head; grep -E "seq_skip|FAIL" $R/golden_cuda.txt | head
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { # name args...
  n=$1; shift
  timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random "$@" --json $R/bench-$n.json > $R/bench-$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/bench-$n.txt | sed 's/.*decode 16 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
run b1 --batch 1
run b1-c4k --batch 1 --context 4096
run b1-c32k --batch 1 --context 32768
run b1-c128k --batch 1 --context 131072
run b16 --batch 16
run b16-c32k --batch 16 --context 32768
run b16-c128k --batch 16 --context 131072
run b64 --batch 64
run b64-c32k --batch 64 --context 32768
run b1-again --batch 1
run b1-c128k-again --batch 1 --context 131072
timeout 200 ncu --graph-profiling node --metrics gpu__time_duration.sum --csv $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 2 --batch 1 --context 131072 --backend cuda --numerics reference --fill-random > $R/ncu-b1-c131072.csv 2>&1
echo "ncu rc=$?" >> $R/tests.txt
gzip $R/ncu-*.csv
cd $R && tar czf $OUT/r1.tgz $(find . -type f -newer .start)

#!/bin/sh
# last call: compute-sanitizer memcheck and racecheck over decode with long contexts (the new top-k and
# scores kernels), test_ep and test_sample_cuda
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
san() { t=$1 l=$2; shift 2; echo "-- $t $l" >> $R/sanitizer.txt
  DSV4_SRC=$PWD timeout 200 compute-sanitizer --tool "$t" --error-exitcode 3 "$@" >> $R/sanitizer.txt 2>&1; echo "exit $?" >> $R/sanitizer.txt; }
san memcheck "q_stock reference --context 3000" $B/bench_cpu -m tests/fixtures/q_stock --prompt 8 --decode 4 --batch 3 --context 3000 --backend cuda
san racecheck "q_stock reference --context 3000" $B/bench_cpu -m tests/fixtures/q_stock --prompt 8 --decode 4 --batch 3 --context 3000 --backend cuda
san memcheck "tiny_a plain --context 3000" $B/bench_cpu -m tests/fixtures/tiny_a --prompt 8 --decode 4 --batch 3 --context 3000 --backend cuda --numerics plain
san racecheck "tiny_b reference --context 5000" $B/bench_cpu -m tests/fixtures/tiny_b --prompt 8 --decode 4 --batch 2 --context 5000 --backend cuda
grep -E "^-- |ERROR SUMMARY|RACECHECK SUMMARY|^exit" $R/sanitizer.txt | paste - - - 
t() { n=$1; shift; timeout 200 "$@" > $R/$n.txt 2>&1; echo "$n rc=$?" | tee -a $R/tests.txt; }
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t ep $B/test_ep
DSV4_SRC=$PWD t sample_cuda $B/test_sample_cuda
cd $R && tar czf $OUT/r6.tgz $(find . -type f -newer .start)

#!/bin/sh
# FP4 indexer keys on the GPU (branch fp4-keys-gpu): bits against b11a713, the GPU tests, memcheck over a
# long-context decode, decode at 128k against the base
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/r9; rm -rf $R; mkdir -p $R
OUT=$R sh scripts/gpu_bits.sh
t() { n=$1; shift; timeout 150 "$@" > $R/$n.txt 2>&1; echo "$n rc=$?" | tee -a $R/tests.txt; }
t ops_cuda $B/test_ops_cuda
grep -E "indexer_topk, 35|FAIL" $R/ops_cuda.txt | head
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t golden_cuda $B/test_golden
grep -E "fp4|FAIL|ERROR" $R/golden_cuda.txt | head -5
DSV4_SRC=$PWD t gpu_vs_cpu $B/test_gpu_vs_cpu
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t ep $B/test_ep
t memcheck compute-sanitizer --tool memcheck --error-exitcode 3 $B/bench_cpu -m tests/fixtures/q_stock --prompt 8 --decode 4 --batch 3 --context 3000 --backend cuda
OUT=$R AB_REPEAT=1 sh scripts/gpu_ab.sh "b16-c128k:--batch 16 --context 131072" "b1-c128k:--batch 1 --context 131072"
grep -m1 "indexer keys" $R/ab-b16-c128k-1.txt
cd $R && tar czf $OUT/r9.tgz .

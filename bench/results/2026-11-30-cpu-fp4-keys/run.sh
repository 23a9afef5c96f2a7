#!/bin/sh
# c995631 (the CPU's indexer keys as FP4 codes and scales; CUDA unchanged): the GPU tests that set the CPU
# beside the GPU, and the bits against b11a713
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/r8; rm -rf $R; mkdir -p $R
OUT=$R sh scripts/gpu_bits.sh
t() { n=$1; shift; timeout 200 "$@" > $R/$n.txt 2>&1; echo "$n rc=$?" | tee -a $R/tests.txt; }
DSV4_SRC=$PWD t gpu_vs_cpu $B/test_gpu_vs_cpu
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t golden_cuda $B/test_golden
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t ep $B/test_ep
grep -E "^gpu-vs-cpu|MISMATCH|FAIL" $R/gpu_vs_cpu.txt | head -20
cd $R && tar czf $OUT/r8.tgz .

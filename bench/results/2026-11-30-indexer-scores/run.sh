#!/bin/sh
# the indexer's tensor-core scores: up to 4 tiles of 64 keys per block, cp.async staging, row pointers per tile; and the new top-k; against b11a713
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; OUT=$R sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
t() { n=$1; shift; timeout 200 "$@" > $R/$n.txt 2>&1; echo "$n rc=$?" | tee -a $R/tests.txt; }
t ops_cuda $B/test_ops_cuda
grep -E "indexer_topk|FAIL" $R/ops_cuda.txt | head
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda t golden_cuda $B/test_golden
DSV4_SRC=$PWD t gpu_vs_cpu $B/test_gpu_vs_cpu
timeout 200 $B/bench_kernels --attn-only > $R/kernels.txt 2>&1
timeout 200 $B/bench_kernels.base --attn-only > $R/kernels-base.txt 2>&1
grep -A13 "^indexer" $R/kernels.txt; grep -A13 "^indexer" $R/kernels-base.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { # name bin args...
  n=$1; bin=$2; shift 2
  timeout 150 $B/$bin -m /tmp/f8 --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random "$@" --json $R/bench-$n.json > $R/bench-$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/bench-$n.txt | sed 's/.*decode 16 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
run b1-c128k bench_cpu --batch 1 --context 131072
run b1-c128k-base bench_cpu.base --batch 1 --context 131072
run b16-c128k bench_cpu --batch 16 --context 131072
run b16-c128k-base bench_cpu.base --batch 16 --context 131072
done
for b in 1 16; do
timeout 200 ncu --graph-profiling node -k regex:k_idx --metrics gpu__time_duration.sum --csv $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 2 --batch $b --context 131072 --backend cuda --numerics reference --fill-random > $R/ncu-idx-b$b.csv 2>&1
echo "ncu b$b"; grep -E "k_idx_(score_tc|topk)" $R/ncu-idx-b$b.csv | tail -2 | cut -c1-60,200-
done
gzip $R/ncu-*.csv
cd $R && tar czf $OUT/r5.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 6: the L2 256-byte prefetch hint on the other weight streams (k_mma_fp8's and k_mma_fp8s' cp.async,
# k_mma_bf16's loads, k_moe_wg's copies) against aa06163 (*.base): test_ops_cuda and GPU vs CPU, then
# bench_kernels (every decode linear, the experts) at batch 1 / 16 / 64, a 4,096-token prefill and decode
# steps at batch 1 / 16 / 64, alternating
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops_cuda exit $?"; grep -E "PASSED|FAILED" $R/ops_cuda.txt
DSV4_SRC=$PWD timeout 200 $B/test_gpu_vs_cpu > $R/gpu_vs_cpu.txt 2>&1; echo "gpu_vs_cpu exit $?"; grep -E "PASSED|FAILED" $R/gpu_vs_cpu.txt
for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 150 $K --batch 1,16,64 > $R/bk-$v.txt 2>&1; echo "bk $v exit $?"
done
paste $R/bk-new.txt $R/bk-base.txt | awk -F'\t' '{printf "%-95s | %s\n", $1, $2}' | grep -vE "^\s*\|" | head -120
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for v in new base; do
    C=$B/bench_cpu; [ $v = base ] && C=$B/bench_cpu.base
    timeout 60 $C $BC --prompt 4096 --decode 2 > $R/pf-$v-$i.txt 2>&1; echo "pf-$v-$i: $(grep -m1 '^model' $R/pf-$v-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
  done
  for b in 1 16 64; do run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b; done
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 3: what each kernel costs on batch 16's critical path, with the values unchanged: a throwaway build of
# 7558c67 whose DSV4_HACK knobs launch a kernel (or an op) twice (/tmp/hack/hack2.diff, not committed; every
# doubled launch is idempotent: same inputs, same outputs), each variant's decode step at batch 16 beside the
# plain step, three rounds
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
xz -dc .gpu/hack.xz > /tmp/bench_hack && chmod +x /tmp/bench_hack
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2 3; do
  for h in none wg8pack bf16pack fp8pack round hcmix hcsplit none wg8mma mmafp8 mmabf16 moeup moedown moeplan moepack route attn idx; do
    DSV4_HACK=$h timeout 40 /tmp/bench_hack $BC --prompt 16 --decode 32 --batch 16 > $R/$h-$i.txt 2>&1
    echo "$h-$i: $(grep -m1 '^model ' $R/$h-$i.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
  done
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 2: where batch 16's step goes on the critical path: a throwaway build of 7558c67 with DSV4_HACK knobs
# that leave out launches (wrong outputs, timing only: /tmp/hack/hack.diff, not committed), each variant's decode
# step at batch 16 against the unmodified step, alternating, two rounds
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
xz -dc .gpu/hack.xz > /tmp/bench_hack && chmod +x /tmp/bench_hack
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2; do
  for h in none wg8pack bf16pack round sink normrope moe attn idx wg8mma mmafp8 hcpost hcpre wg8pack,bf16pack,round; do
    DSV4_HACK=$h timeout 40 /tmp/bench_hack $BC --prompt 16 --decode 32 --batch 16 > $R/$h-$i.txt 2>&1
    echo "$h-$i: $(grep -m1 '^model ' $R/$h-$i.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
  done
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# call 5: wo_a's parts along K (k_mma_fp8, 8 groups in one launch; mma_parts picks P = 4 for it on 132 SMs):
# a throwaway build of 7558c67 whose DSV4_MMA_PG overrides P for grouped launches (/tmp/hack/pg.diff; bits
# change with P), decode at batch 16 / 64 / 1 for P = 1, 2, 4 (default), 8; and the wg8 ring budget
# (DSV4_WG8_SMEM_KB, default 200) at batch 16. Alternating, three rounds
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
xz -dc .gpu/hack.xz > /tmp/bench_hack && chmod +x /tmp/bench_hack
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 e=$2 b=$3
  env $e timeout 40 /tmp/bench_hack $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2 3; do
  for b in 16 64 1; do
    for pg in 0 1 2 8; do run b$b-pg$pg-$i DSV4_MMA_PG=$pg $b; done
  done
  for kb in 100 150 228; do run b16-kb$kb-$i DSV4_WG8_SMEM_KB=$kb 16; done
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

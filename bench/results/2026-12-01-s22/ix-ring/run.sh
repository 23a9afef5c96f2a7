#!/bin/sh
# call 3: the indexer's scores kernel with a ring of key tiles (7 FP4 tiles in flight a block, each thread its
# own key's address a tile ahead) and a token's every Y-th tile a block (about one wave over the grid),
# against 025ca55 (*.base): the suite with the base's logits byte for byte, the attention tables of both
# builds, decode new / base alternating at 1 x 128k, 16 x 128k, 64 x 32k, 64 x 128k, and a 4k prefill
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for v in bench_kernels bench_kernels.base; do
  timeout 150 $B/$v --attn-only --batch 1,16,64 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -A10 "^indexer, FP4" $R/attn-$v.txt | grep "^top"
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 b=$3 ctx=$4 pr=${5:-16} dc=${6:-32}
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  cx=; [ $ctx -gt 0 ] && cx="--context $ctx"
  timeout 90 $c -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt $pr --decode $dc --batch $b $cx > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for c in "1 131072" "16 131072" "64 32768"; do set -- $c; for v in new base; do run b$1-c$2-$v-$i $v $1 $2; done; done
done
for v in new base; do run b64-c131072-$v-1 $v 64 131072; run pf4096-$v-1 $v 1 0 4096 2; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

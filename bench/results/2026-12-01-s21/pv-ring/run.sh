#!/bin/sh
# call 4: on BF16 rows the weighted sum keeps PV_STAGES - 1 = 3 value tiles in flight (a ring in dynamic shared
# memory) and the scores take 1-4 tiles of rows a block with the token's q loaded once (k_attn_qkb: tiles by the
# grid, DSV4_ATTN_QK_TILES=1 the one-tile baseline in the same binary), against 85ca2a7 (*.base). The suite with
# the base's logits byte for byte (test_ops_cuda's test_attn_tiles: 1-4 tiles the same outputs), the attention
# table of this build, of this build with one tile, and of the base; decode new / base alternating, and `dsv4 tune`
# on BF16 rows (the built-in choices were measured on FP32 rows)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|tiles a block" $R/suite.txt | head -40
OUT=$OUT_SAVE
for v in new tiles1 base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base; [ $v = tiles1 ] && c="env DSV4_ATTN_QK_TILES=1 $B/bench_kernels"
  timeout 150 $c --attn-only --batch 1,16,64 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 b=$3 ctx=$4
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  cx=; [ $ctx -gt 0 ] && cx="--context $ctx"
  timeout 60 $c -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 32 --batch $b $cx > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for c in "16 0" "64 0" "16 131072" "64 32768"; do set -- $c; for v in new base; do run b$1-c$2-$v-$i $v $1 $2; done; done
done
timeout 150 $B/dsv4 tune -o $R/tune.json --reps 30 > $R/tune.txt 2>&1; tail -15 $R/tune.txt
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

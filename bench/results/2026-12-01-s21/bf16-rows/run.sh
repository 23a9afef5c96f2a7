#!/bin/sh
# call 1: BF16 cached rows on the CUDA backend (dsv4_kv.bf16_rows: window ring, compressed rows, indexer keys
# where not FP4). The suite (every GPU test, quick memchecks), logits with BF16 rows against DSV4_KV_BF16=0 (FP32
# rows, the same binary) byte for byte on a 2-layer Flash-shaped checkpoint, the attention table (BF16 rows vs
# FP32 rows, same run), then decode steps BF16 vs FP32 rows alternating, short and long contexts.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 >/dev/null 2>&1
ids=$(seq -s, 3 302)
for num in reference plain; do for pf in 300 260; do
  for v in bf16 f32; do
    e=; [ $v = f32 ] && e="env DSV4_KV_BF16=0"
    $e $B/dsv4 logits -m /tmp/f2 --fill-random --backend cuda --numerics $num --ids "$ids" --prefill $pf -o /tmp/l-$v.bin 2>>$R/bits.err
  done
  if cmp -s /tmp/l-bf16.bin /tmp/l-f32.bin; then r=identical; else r=DIFFERENT; fi
  echo "logits $num prefill $pf of 300 (2 Flash layers): BF16 rows vs FP32 rows $r" | tee -a $R/bits.txt
done; done
timeout 150 $B/bench_kernels --attn-only --batch 1,16,64 --json $R/attn.json > $R/attn.txt 2>&1
grep -E "^(attention|CSA|HCA)" $R/attn.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 b=$3 ctx=$4
  e=; [ $v = f32 ] && e="env DSV4_KV_BF16=0"
  cx=; [ $ctx -gt 0 ] && cx="--context $ctx"
  timeout 60 $e $B/bench_cpu -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 32 --batch $b $cx > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do
  for c in "1 0" "16 0" "64 0" "16 32768" "16 131072" "64 32768"; do
    set -- $c
    for v in bf16 f32; do run b$1-c$2-$v-$i $v $1 $2; done
  done
done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

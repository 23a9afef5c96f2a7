#!/bin/sh
# (prepared in s27, NOT run: no device time left; run it first next session after BASE=<a build-gpu of main>
# sh scripts/gpu_pack.sh on wip/one-csa-pt) k_attn_one for CSA: the sequence's page table in shared memory
# before griddepcontrol.wait, the indexer's count and all its choices loaded together after it - one dependent
# load less behind the indexer (v47's trace: CSA 4k's addresses 3,000-5,700 cycles). scripts/gpu_verify.sh
# (the suite with memchecks, the logits against main's), the attention at batch 1 new / base, decode at batch 1
# and 1 x 32k (4 rounds); then decode at batch 2 with one2tok.json and at batch 8 / 12 with DSV4_MOE_NOB=0
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r12; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
sh scripts/gpu_verify.sh
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 60 $c --attn-only --batch 1 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | awk '{print $1,$2,$3,$4,$5,$7}'
done
AB_REPEAT=4 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b1c32k:--batch 1 --context 32768"
# two questions of s27 on the same build: k_attn_one at 2 tokens (one2tok.json: the built-in table with "one"
# up to 2 tokens) against the built-in parts16; the five-block experts (default at 4-12 tokens) against
# DSV4_MOE_NOB=0 at batch 8 and 12 (s27's calls disagreed: -2.5 % / even)
ONE2=$PWD/bench/results/2026-12-01-s27/csa-pt/one2tok.json
AB_REPEAT=4 AB_DECODE=32 AB_BINS="one2=env DSV4_TUNE=$ONE2 $B/bench_cpu;auto=$B/bench_cpu" timeout 120 \
  sh scripts/gpu_ab.sh "b2:--batch 2"
AB_REPEAT=4 AB_DECODE=32 AB_BINS="nob=$B/bench_cpu;ring=env DSV4_MOE_NOB=0 $B/bench_cpu" timeout 150 \
  sh scripts/gpu_ab.sh "b8:--batch 8" "b12:--batch 12"
cat $R/ab.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# s27 call 2 (main at 1c13911 + a1f79a4): where batch 1's attention and experts wait, and more decode rounds
# for the tune choice. ncu --set full with source-level sampling: k_attn_one (one.json) at batch 1, CSA 4k
# and HCA 4k; k_moe16's gate/up and down at batch 1 (bench_kernels --experts-only). Then decode at batch 1
# with one1.json (k_attn_one at 1 token) against the built-in table, 4 rounds, and at batch 1 x 32k, 3
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
ONE=$PWD/bench/results/2026-12-01-s26/one.json
ONE1=$PWD/bench/results/2026-12-01-s26/one1.json
prof() { # name kernel-regex skip count cmd...
  n=$1 k=$2 s=$3 c=$4; shift 4
  timeout 150 ncu --clock-control none --set full --import-source no -k regex:"$k" --launch-skip $s --launch-count $c \
    -o $R/$n "$@" > $R/ncu-$n.txt 2>&1
  echo "$n rc=$?"; tail -2 $R/ncu-$n.txt
  ncu -i $R/$n.ncu-rep --page details > $R/details-$n.txt 2>&1
  ncu -i $R/$n.ncu-rep --page source --csv --print-source sass > $R/src-$n.csv 2>&1; gzip -9 -n $R/src-$n.csv
  grep -E "^  [a-z_].*\(|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|DRAM Throughput" $R/details-$n.txt | head -24
  rm -f $R/$n.ncu-rep
}
# bench_kernels --attn-only runs CSA then HCA at each context; with --batch 1 and the first context only
DSV4_TUNE=$ONE prof one-csa '^k_attn_one$' 5 1 $B/bench_kernels --attn-only --batch 1 --reps 8
DSV4_TUNE=$ONE prof one-hca '^k_attn_one$' 30 1 $B/bench_kernels --attn-only --batch 1 --reps 8
prof moe1 '^k_moe16$' 8 2 $B/bench_kernels --experts-only --batch 1 --reps 3
AB_REPEAT=4 AB_DECODE=32 AB_BINS="one1=env DSV4_TUNE=$ONE1 $B/bench_cpu;auto=$B/bench_cpu" \
  timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b1c32k:--batch 1 --context 32768"
cat $R/ab.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

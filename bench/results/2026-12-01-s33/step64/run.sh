#!/bin/sh
# (prepared in s33, NOT run) why the weighted sum on wgmma, 20 % faster alone at 64 tokens, left decode at
# 64 x 4k even (pvw/c5-decode): every kernel of a decode step at batch 64 with a 4k context timed alone (ncu,
# graph nodes one by one), with the built-in table (wg128) and the old one (walk128, pvw/h200-walk.json),
# and the step's time beside each. bench/ncu_step.py turns each CSV into a kernel table:
#   python3 bench/ncu_step.py bench/results/2026-12-01-s33/step64/ncu-<v>.csv.gz
# If k_attn_pvw's calls sum ~120 us less than k_attn_pv's and the step does not move, the attention is not on
# the step's critical path at 64 (the second queue); else its in-step duration differs from its alone figure.
# sh scripts/gpu_pack.sh; carry .gpu. About 5 minutes.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin step64
D=bench/results/2026-12-01-s33/pvw
model=$(mktemp -d)/flash
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$model" > /dev/null 2>&1
for v in wg walk; do
  if [ $v = wg ]; then T=; else T=$D/h200-walk.json; fi
  DSV4_TUNE=$T $B/bench_cpu -m "$model" --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random \
    --batch 64 --context 4096 > $R/plain-$v.txt 2>&1
  grep -m1 'ms/step\|ms per step' $R/plain-$v.txt
  DSV4_TUNE=$T timeout 250 ncu --clock-control none --graph-profiling node --csv --print-units base \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size \
    $B/bench_cpu -m "$model" --prompt 16 --decode 2 --backend cuda --numerics reference --fill-random --batch 64 \
    --context 4096 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  echo "ncu $v rc=$? lines $(wc -l < $R/ncu-$v.csv)"; tail -2 $R/ncu-$v.err
  gzip -9 -n $R/ncu-$v.csv
done
call_end

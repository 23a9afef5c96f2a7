#!/bin/sh
# s31: (v51 main, fd7f8a5) every kernel of decode steps at batch 1 and 16 timed alone (ncu, graph nodes one by one:
# duration, DRAM bytes, grid), 8 Flash layers as gpu_ab.sh makes them, reference numerics; the sum of the
# kernels' own times against the step's time tells launches/dependencies from kernel time.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin step
model=$(mktemp -d)/flash
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$model" > /dev/null 2>&1
for b in 1 16; do
  $B/bench_cpu -m "$model" --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random --batch $b > $R/plain-b$b.txt 2>&1
  grep -m1 '^model ' $R/plain-b$b.txt
  timeout 240 ncu --clock-control none --graph-profiling node --csv --print-units base \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size \
    $B/bench_cpu -m "$model" --prompt 16 --decode 3 --backend cuda --numerics reference --fill-random --batch $b \
    > $R/ncu-b$b.csv 2> $R/ncu-b$b.err
  echo "ncu b$b rc=$? lines $(wc -l < $R/ncu-b$b.csv)"; tail -2 $R/ncu-b$b.err
done
call_end

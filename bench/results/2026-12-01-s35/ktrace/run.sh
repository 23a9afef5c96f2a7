#!/bin/sh
# s35 call 2: batch 1's and batch 16's decode step kernel by kernel inside the graph (bench/ktrace.c: CUPTI's
# start and end of every graph node; bench/ktrace.py: what each adds to the step), 8 Flash-shaped layers,
# reference numerics; the same runs without the tracer beside, to see what tracing costs.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ktrace
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 32"
for b in 1 16; do
  timeout 60 $B/bench_cpu $BC --batch $b > $R/plain-b$b.txt 2>&1
  CUDA_INJECTION64_PATH=$PWD/$B/libktrace.so KTRACE_OUT=$R/kt-b$b.csv timeout 90 $B/bench_cpu $BC --batch $b > $R/traced-b$b.txt 2>&1
  echo "== b$b"; grep -m2 -E "decode|ms" $R/plain-b$b.txt; grep -m2 -E "decode|ms|ktrace" $R/traced-b$b.txt; tail -1 $R/traced-b$b.txt
  python3 bench/ktrace.py $R/kt-b$b.csv > $R/kt-b$b.txt 2>&1; head -40 $R/kt-b$b.txt
  gzip -f $R/kt-b$b.csv
done
call_end

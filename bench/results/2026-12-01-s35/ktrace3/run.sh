#!/bin/sh
# s35 call 4: the step between two replays (now with the driver calls), without node tracing's launch cost: KTRACE_MODE=graph (each
# replay one record, plus the kernels and copies outside graphs), batch 1 / 2 / 16, beside plain runs.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ktrace3
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64"
for b in 1 16; do
  timeout 60 $B/bench_cpu $BC --batch $b > $R/plain-b$b.txt 2>&1
  KTRACE_MODE=graph CUDA_INJECTION64_PATH=$PWD/$B/libktrace.so KTRACE_OUT=$R/kg-b$b.csv timeout 90 $B/bench_cpu $BC --batch $b > $R/traced-b$b.txt 2>&1
  echo "== b$b"; grep -m1 "decode" $R/plain-b$b.txt | sed 's/.*decode/decode/'; grep -m1 "decode" $R/traced-b$b.txt | sed 's/.*decode/decode/'
  python3 bench/ktrace.py $R/kg-b$b.csv > $R/kg-b$b.txt 2>&1; cat $R/kg-b$b.txt
  grep -v synth_fill_kernel $R/kg-b$b.csv | gzip -9 > $R/kg-b$b.csv.gz; rm $R/kg-b$b.csv # (the load's fill kernels left out)
done
call_end

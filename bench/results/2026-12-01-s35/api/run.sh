#!/bin/sh
# s35 call 5: the host's calls between two replays at batch 1 (KTRACE_MODE=api: runtime and driver calls,
# each costing the host a few microseconds more under the tracer) - how long cudaGraphLaunch takes.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin api
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64"
KTRACE_MODE=api CUDA_INJECTION64_PATH=$PWD/$B/libktrace.so KTRACE_OUT=$R/ka-b1.csv timeout 90 $B/bench_cpu $BC --batch 1 > $R/traced-b1.txt 2>&1
python3 bench/ktrace.py $R/ka-b1.csv --step 30 > $R/ka-b1.txt 2>&1; cat $R/ka-b1.txt
grep -v synth_fill_kernel $R/ka-b1.csv | gzip -9 > $R/ka-b1.csv.gz; rm $R/ka-b1.csv
call_end

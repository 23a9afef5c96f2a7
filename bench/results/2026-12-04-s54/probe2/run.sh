#!/bin/sh
# s54 probe2/ (probe/ again, the flush reading instead of writing): bench/stream_probe.cu (the experts' gate / up pass at one token without its arithmetic: the
# bytes' pattern, the ring's depth, the grid's waves, a stand-in for the loop's instructions), beside the
# routed experts' op alone (bench_kernels --experts-only) at 1 and 2 tokens, on one H200.
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin probe2
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/stream_probe.cu -o /tmp/stream_probe
/tmp/stream_probe 9 > "$R/probe.txt" 2>&1
cat "$R/probe.txt"
call_kernels experts 2 "cur=$B/bench_kernels" "--experts-only --batch 1,2"
tail -n 12 "$R/experts-cur-1.txt"
call_end

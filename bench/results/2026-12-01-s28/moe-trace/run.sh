#!/bin/sh
# (prepared in s28, NOT run) Where the routed experts' ~18 us fixed part at batch 1 goes: a block timeline of
# one call (wip/moe-trace: MOE_TRACE records each block's kernel, SM and %globaltimer at entry and exit).
# Here: cmake -S . -B build-trace -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DMOE_TRACE &&
# cmake --build build-trace --target dsv4 bench_cpu bench_kernels && BASE=build-trace sh scripts/gpu_pack.sh
# (the traced binaries ride as *.base). bench_kernels --experts-only runs 51 calls a numerics (plain,
# reference, W4A8): call 60 is reference numerics' 9th timed call, started from an idle GPU. Then
# python3 bench/moe_trace.py trace-b1.txt (and -b8) here.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r1
for b in 1 8; do
  DSV4_MOE_TRACE=60 timeout 60 $B/bench_kernels.base --experts-only --batch $b > $R/experts-b$b.txt 2> $R/trace-b$b.txt
  grep -c moetrace $R/trace-b$b.txt
done
call_end

#!/bin/sh
# s75 pdl/ (prepared, NOT GPU-run): bench/pdl_probe.cu, a stand-alone PDL chain A -> B -> C (the attention, the
# pack and wo_a's stand-ins; A with no cluster or clusters of 2 / 8, with and without a fork after it, on streams
# and as a graph): whether a kernel two programmatic launches behind a cluster kernel can start before it ends.
# The device has nvcc: the probe is compiled there, no bundle needed (any AS's bundle; ~1 min).
# Run: sh scripts/gpu_multi.sh NAME=bench/results/2026-12-06-s75/pdl/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pdl
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/pdl_probe.cu -o /tmp/pdl_probe > "$R/nvcc.txt" 2>&1
echo "nvcc exit $?"
timeout 120 /tmp/pdl_probe > "$R/pdl.txt" 2>&1
echo "pdl_probe exit $?"
cat "$R/pdl.txt"
call_end

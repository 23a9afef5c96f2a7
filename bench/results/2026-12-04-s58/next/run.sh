#!/bin/sh
# s58 next/ (prepared, NOT run: the session's device time was spent): bench/stream_probe.cu with its new modes -
# the experts' gate / up grid at one token streaming its 53.5 MB with, per group, C rounds of FMAs (fma, s54's),
# k_moe16's decode of the words (dec: fp4_eo's logic and 64 F2FP) or the decode and its 16 MMAs with the unit
# scales' FMAs (mma) - to find which of the loop's instruction classes costs the ~10 us k_moe16 spends beyond
# the 14 us of pure streaming (KERNEL_NOTES, "State after s58", item 1). Also the experts alone at 1 token for
# the same call's machine. No pack needed beyond the bundle (nvcc on the device compiles the probe).
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude bench/stream_probe.cu -o /tmp/stream_probe
/tmp/stream_probe 9 > "$R/probe.txt" 2>&1
echo "probe exit $?"
grep -E "^(SMs|empty|ldg)|^moe +(fma +3 +(0|256) +(128|88)|dec|mma)" "$R/probe.txt"
call_kernels experts 2 "new=$B/bench_kernels" "--experts-only --batch 1"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_end

#!/bin/sh
# s75 bits/: the landed tree (the 16-byte sends up to 16-token tiles, snap/'s build) against main's 2f599e2d build:
# the logits byte for byte (scripts/gpu_bits.sh: reference and plain prefills of 41 / 2,100 tokens on 2-4 Flash-shaped
# layers, repeated), then test_golden and test_gpu_vs_cpu (GPU vs CPU end to end on every fixture).
# Pack: AS=bits BASE=/tmp/base-main NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh bits=bench/results/2026-12-06-s75/bits/run.sh (~2 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bits
call_bits
for t in test_golden test_gpu_vs_cpu; do
  timeout 150 $B/$t > "$R/$t.txt" 2>&1
  echo "$t exit $?"
  grep -E "\[  (PASSED|FAILED)" "$R/$t.txt"
  gzip -9 -n "$R/$t.txt"
done
call_end

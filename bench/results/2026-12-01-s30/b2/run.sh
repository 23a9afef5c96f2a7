#!/bin/sh
# Batch 2 and 1 again, main (e42312a's code) against 2b5a380, 4 rounds alternating: the closing call had batch 2
# 3 % slower. The same .gpu as closing/ (BASE=/tmp/base sh scripts/gpu_pack.sh); carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin b2
AB_REPEAT=4 AB_DECODE=32 timeout 300 sh scripts/gpu_ab.sh "b2:--batch 2" "b1:--batch 1"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $R/machine.txt 2>&1
call_end

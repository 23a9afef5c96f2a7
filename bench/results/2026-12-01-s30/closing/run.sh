#!/bin/sh
# The session's closing call on main as committed (v50: f7504de + b4ed7cf over 2b5a380): the suite (memchecks,
# logits against 2b5a380 byte for byte), decode against 2b5a380 at batch 1 / 2 / 16 (2 rounds, alternating), and
# the head once (no server). BASE=/tmp/base (a build-gpu of 2b5a380) sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin closing
sh scripts/gpu_verify.sh
AB_REPEAT=2 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
cat $R/ab.txt
HEAD_RUNS=1 HEAD_SERVE=0 timeout 150 sh scripts/gpu_head.sh
call_end

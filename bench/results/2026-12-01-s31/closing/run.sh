#!/bin/sh
# s31's closing call on main as committed (v51: ebb1c98's k_norm_rope, the F16 path's FP4 layout made at load
# through be->moe_prepare): the suite (memchecks, logits against 92aabff byte for byte), decode against 92aabff
# (main at the session's start) at batch 1 / 2 / 16 (3 rounds, alternating) and 64 (2), each run's first prefill
# (the layout is made at load now: no first-step cost), and the head once (no server).
# BASE=/tmp/base92 (a build-gpu of 92aabff) sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin closing
sh scripts/gpu_verify.sh
AB_REPEAT=3 AB_DECODE=32 timeout 240 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
AB_REPEAT=2 AB_DECODE=32 timeout 100 sh scripts/gpu_ab.sh "b64:--batch 64"
cat $R/ab.txt
grep -h "^model" $R/ab-b1-1.txt $R/ab-b1-base-1.txt | sed 's/.*batch/batch/; s/decode.*//'
HEAD_RUNS=1 HEAD_SERVE=0 timeout 150 sh scripts/gpu_head.sh
call_end

#!/bin/sh
# s34: the check before landing k_attn_one's cuts (am_den four pairs at once and branch-free, the sink ahead,
# q's loads beside the indexer's, the weights without a division, the scores unrolled): the suite with its
# memchecks and the logits byte for byte against main at the session's start (BASE=/tmp/base34, a build of
# 573ff27), then decode at batch 1 / 2 (x 4k) new / base alternating (3 rounds) and the attention table.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
VERIFY_TIMEOUT=330 sh scripts/gpu_verify.sh
AB_REPEAT=3 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b1-4k:--batch 1 --context 4096" "b2:--batch 2"
cat $R/ab.txt
call_end

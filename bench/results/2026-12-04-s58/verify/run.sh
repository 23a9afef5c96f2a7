#!/bin/sh
# s58 verify/: the landed tree (NVFP4's experts on 2-pair tiles at batch 4: moe16_bp2 for both formats) - the
# whole GPU suite with quick memchecks (its passes force DSV4_MOE_BP each way and two row blocks) and the logits
# against 9dc41f3's build byte for byte (scripts/gpu_verify.sh).
# Pack: BASE=<9dc41f3's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
VERIFY_TIMEOUT=480 sh scripts/gpu_verify.sh
call_end

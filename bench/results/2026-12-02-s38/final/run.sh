#!/bin/sh
# s38 call 8 (42a6045, the landed k_idx_topk): the suite, with the logits against 8a1a104's build byte for byte.
# Pack: BASE=<8a1a104's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
VERIFY_TIMEOUT=200 sh scripts/gpu_verify.sh
call_end

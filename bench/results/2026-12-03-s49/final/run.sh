#!/bin/sh
# s49 call 6: the whole suite on v68 as committed (one8 at 1 token, the built-in table): every GPU test, the
# quick and Flash-shaped memchecks, logits against 557a942's build (v67) byte for byte.
# Pack: BASE=<build-gpu of 557a942> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh | tail -14
call_end

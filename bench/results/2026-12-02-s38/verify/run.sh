#!/bin/sh
# s38 call 1 (main at 8a1a104): the suite on the review mends not GPU-run in s37 (9ece832, d3a45d9, 087da80,
# 8a1a104, be9f799; gpu_verify.sh now with DSV4_SAMPLE_QUICK=3's memcheck), then bench/gather_probe.cu: how fast
# one block gathers scattered 1 KB rows into shared memory (cp.async 16 B a lane against cp.async.bulk a row).
# Pack: NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh; cp gather_probe (nvcc of bench/gather_probe.cu) .gpu/.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
VERIFY_TIMEOUT=360 sh scripts/gpu_verify.sh
.gpu/gather_probe > $R/gather.txt 2>&1; echo "== gather exit $?"; cat $R/gather.txt
call_end

#!/bin/sh
# s49 call 1: s48's div64.diff applied on 557a942 (v67) against 557a942's build as the base.
# The whole suite (the first on v67's cluster top-k, with div64's 32-bit index-to-row paths), logits against the
# base byte for byte; then the attention and indexer alone new / base (two rounds).
# Pack: BASE=<build-gpu of 557a942> NOTOK=1 sh scripts/gpu_pack.sh (with div64.diff applied)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
VERIFY_TIMEOUT=400 sh scripts/gpu_verify.sh | tail -14
zcat "$R/ops_cuda.txt.gz" | grep -E "indexer_topk, 34,999" | head -8
snap
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16"
grep -E "CSA|HCA|top-512 of (32768|262144)" "$R/attn-new-1.txt" | head -12
grep -E "CSA|HCA|top-512 of (32768|262144)" "$R/attn-base-1.txt" | head -12
call_end

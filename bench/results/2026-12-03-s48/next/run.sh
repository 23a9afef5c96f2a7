#!/bin/sh
# Prepared in s48 for the next session's first call (NOT run): the whole suite with its memchecks on v67's top-k
# (bound/ ran test_ops_cuda and memcheck of k_idx_topk, not gpu_verify.sh: the device time ran out), then a second
# round of bound/'s decode A/B (1 x ~1M and 16 x 512k, the same binary with the cluster off).
# Pack: BASE=<a build-gpu of bc986a4 (v66)> NOTOK=1 sh scripts/gpu_pack.sh (the logits check); copy this folder
# to the new session's and run it from there.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
VERIFY_TIMEOUT=400 sh scripts/gpu_verify.sh | tail -14
zcat "$R/ops_cuda.txt.gz" | grep -E "indexer_topk, 34,999" | head -8
snap
call_ab 2 "new=$B/bench_cpu --overlap;one=env DSV4_IX_CL=0 $B/bench_cpu --overlap" "b1c1m:--batch 1 --context 1040000" \
  "b16c512k:--batch 16 --context 524288"
call_end

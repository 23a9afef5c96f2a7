#!/bin/sh
# Prepared in s47 for the next session's first call (NOT run): what s47's topk-cl2/ could not finish in the device
# time left - memcheck of k_idx_topk<CL> (bench_kernels' 1M rows take the cluster: 262,144 candidates a token at
# batch 1 and 16), the whole suite with its quick memchecks to their end (305f529 changed the kernel after
# topk-cl2/: the block totals by ix_block_scan - compiled, not GPU-run; indexer_large checks it), a second round of the decode A/B at 1 x ~1M and
# 16 x 128k in an engine sized for 1M, with and without the cluster (DSV4_IX_CL=0, the same binary).
# Pack: BASE=<b92ec8c's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh (the logits check); copy this folder to the new
# session's and run it from there.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
call_memcheck k_idx_topk "--attn-only --batch 1,16 --reps 1"
call_ab 2 "new=$B/bench_cpu --overlap;one=env DSV4_IX_CL=0 $B/bench_cpu --overlap" "b1c1m:--batch 1 --context 1040000" \
  "b16c128kx1m:--batch 16 --context 131072 --max-context 1048576" "b16c512k:--batch 16 --context 524288"
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh | tail -14
zcat "$R/ops_cuda.txt.gz" | grep -E "indexer_topk, 34,999" | head -8
call_end

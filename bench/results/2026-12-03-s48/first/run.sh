#!/bin/sh
# s48's first call: s47's prepared next/run.sh (not run there for want of device time), with a snapshot of $R after
# each step. memcheck of k_idx_topk<CL> (bench_kernels' 1M rows take the cluster: 262,144 candidates a token at
# batch 1 and 16), the whole suite with its quick memchecks (305f529 changed the cluster's block totals to
# ix_block_scan - compiled, not GPU-run in s47; indexer_large checks it against the CPU), then one round of the
# decode A/B at 1 x ~1M, 16 x 128k in an engine sized for 1M and 16 x 512k, with and without the cluster
# (DSV4_IX_CL=0, the same binary).
# Pack: BASE=<b92ec8c's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh (the logits check).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin first
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
call_memcheck k_idx_topk "--attn-only --batch 1,16 --reps 1"
grep -cE "k_idx_topk" "$R/san-k_idx_topk.txt"
snap
VERIFY_TIMEOUT=400 sh scripts/gpu_verify.sh | tail -14
zcat "$R/ops_cuda.txt.gz" | grep -E "indexer_topk" | head -14
snap
call_ab 1 "new=$B/bench_cpu --overlap;one=env DSV4_IX_CL=0 $B/bench_cpu --overlap" "b1c1m:--batch 1 --context 1040000" \
  "b16c128kx1m:--batch 16 --context 131072 --max-context 1048576" "b16c512k:--batch 16 --context 524288"
call_end

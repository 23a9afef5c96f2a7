#!/bin/sh
# s47 call 3: topk-cl/'s cluster only where it paid - a token of more than 49,152 candidates (a context past
# ~196k tokens) is the cluster's, fewer block 0's alone inside the same launch (the CL = 1 code), and the cluster
# is chosen only where a call may have such a token (max_n > 49,152). Decode at 1 x ~1M and 16 x 128k in an
# engine sized for 1M (every token block 0's) with and without the cluster (DSV4_IX_CL=0, the same binary), the
# indexer tables with and without (one round: the device time left), then the whole suite (logits against
# b92ec8c byte for byte; test_ops_cuda's indexer_large now also the cluster past 34,000 candidates with block
# 0 alone below) and memcheck of k_idx_topk; r.tgz rewritten after each step (a timeout keeps what ran).
# Pack: BASE=<b92ec8c's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin topk-cl2
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
call_ab 1 "new=$B/bench_cpu --overlap;one=env DSV4_IX_CL=0 $B/bench_cpu --overlap" "b1c1m:--batch 1 --context 1040000" \
  "b16c128kx1m:--batch 16 --context 131072 --max-context 1048576"
snap
call_kernels attn 1 "cl=$B/bench_kernels;one=env DSV4_IX_CL=0 $B/bench_kernels" "--attn-only --batch 1,16"
for f in "$R"/attn-*.txt; do echo "== $(basename "$f")"; grep -E "^top-512" "$f" | awk '{print $3, $4, $5, $7, $10}' | tail -12; done
snap
VERIFY_TIMEOUT=240 sh scripts/gpu_verify.sh | tail -12
zcat "$R/ops_cuda.txt.gz" | grep -E "indexer_topk, 34,999" | head -8
snap
call_memcheck k_idx_topk "--attn-only --batch 1,16 --reps 1"
call_end

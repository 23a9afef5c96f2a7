#!/bin/sh
# s58 hccl/: hc_pre's / hc_head's collapse (pre, u, the norm after) over a cluster of 8 one-warp blocks a token
# (k_hc_collapse_cl, up to 64 tokens) instead of one 256-thread block. test_ops_cuda (its new cases compare the
# two bit for bit on the GPU); gpu_bits.sh, the logits against 9dc41f3's build byte for byte (a 41-token prefill
# and decode steps: both take the cluster) with 5 repeats; decode A/B in one binary, the tree (new) against
# DSV4_HC_CL=0 (the one-block kernel), batch 1 / 4 / 16 / 64, three rounds; a node trace at batch 1 of each.
# Pack: BASE=<9dc41f3's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
# (Ran with these steps inline; call_ops and call_bits in scripts/gpu_call.sh are those lines.)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin hccl
call_ops "cluster collapse"
call_bits
call_ab 3 "new=$B/bench_cpu --overlap;cl0=env DSV4_HC_CL=0 $B/bench_cpu --overlap" "b1:--batch 1" "b4:--batch 4" \
  "b16:--batch 16" "b64:--batch 64"
call_trace new-b1 "--batch 1"
(export DSV4_HC_CL=0; call_trace cl0-b1 "--batch 1")
for f in "$R"/kt-*.csv.gz; do [ "$(stat -c %s "$f")" -gt 300000 ] && rm -f "$f"; done
call_end

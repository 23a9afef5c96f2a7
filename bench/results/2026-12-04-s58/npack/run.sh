#!/bin/sh
# s58 npack/: the q path's RMSNorm writes the FP8 pack of cq for wq_b (and the indexer's wq_b) in its own launch
# (k_rmsnorm_pack; norm_linear_next announces it), one dependent launch fewer a layer; with it, NVFP4's experts
# on 2-pair tiles at batch 4 (moe16_bp2). test_ops_cuda (its norm_linear_next cases compare announced and
# unannounced bit for bit); gpu_bits.sh, the logits against 9dc41f3's build byte for byte, 5 repeats; decode A/B
# in one binary, the tree (new) against DSV4_NORM_PACK=0 (the norm and the pack as two launches), batch 1 / 4 /
# 16 / 64, three rounds; 8 layers with NVFP4 experts at batch 4, the tree against DSV4_MOE_BP=0 (8-pair tiles);
# a node trace at batch 1.
# Pack: BASE=<9dc41f3's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
# (Ran with these steps inline; call_ops and call_bits in scripts/gpu_call.sh are those lines.)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin npack
call_ops "norm_linear_next"
call_bits
call_ab 3 "new=$B/bench_cpu --overlap;np0=env DSV4_NORM_PACK=0 $B/bench_cpu --overlap" "b1:--batch 1" "b4:--batch 4" \
  "b16:--batch 16" "b64:--batch 64"
$B/dsv4 mkmodel --preset flash --layers 8 --experts nvfp4 --sparse -o /tmp/f8n > "$R/mkmodel.txt" 2>&1
(export AB_MODEL=/tmp/f8n; call_ab 3 "new=$B/bench_cpu --overlap --fill-random;bp0=env DSV4_MOE_BP=0 $B/bench_cpu --overlap --fill-random" "b4n:--batch 4")
call_trace new-b1 "--batch 1"
for f in "$R"/kt-*.csv.gz; do [ "$(stat -c %s "$f")" -gt 300000 ] && rm -f "$f"; done
call_end

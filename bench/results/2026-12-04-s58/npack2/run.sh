#!/bin/sh
# s58 npack2/: npack/'s k_rmsnorm_pack with the pack reading the normalised row from shared memory (the block
# stores y there too as it writes it) instead of reading back its own global stores. test_ops_cuda (its
# norm_linear_next cases compare announced and unannounced bit for bit); gpu_bits.sh, the logits against
# 9dc41f3's build byte for byte, 5 repeats; decode A/B in one binary, the tree (new) against DSV4_NORM_PACK=0
# (the norm and the pack as two launches), batch 1 / 4 / 16 / 64, three rounds; a node trace at batch 1.
# Pack: BASE=<9dc41f3's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
# (Ran with these steps inline; call_ops and call_bits in scripts/gpu_call.sh are those lines.)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin npack2
call_ops "norm_linear_next"
call_bits
call_ab 3 "new=$B/bench_cpu --overlap;np0=env DSV4_NORM_PACK=0 $B/bench_cpu --overlap" "b1:--batch 1" "b4:--batch 4" \
  "b16:--batch 16" "b64:--batch 64"
call_trace new-b1 "--batch 1"
for f in "$R"/kt-*.csv.gz; do [ "$(stat -c %s "$f")" -gt 300000 ] && rm -f "$f"; done
call_end

#!/bin/sh
# s55 exp5/: the BF16 part cap (DSV4_BF16_PMAX=4) on an HCA layer's compressor projections alone (hca: 16 to 31
# row tiles, DSV4_BF16_PTOP=32: 512 rows each) against it on those and a CSA layer's (t16: 16 row tiles or more)
# and the default (P 8 for both). exp3 found the batch-1 gain in the HCA layers' (the CSA layers' alone, t32: none)
# and a cost at batch 64 (t16: +0.2-0.5 %). Decode at batch 1 / 16 / 64 / 1 x 4k and batch 16 staggered, three
# rounds alternating.
# Pack: BASE=<f386fb5's build-gpu> KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin exp5
call_ab 3 "new=$B/bench_cpu --overlap;hca=env DSV4_BF16_PMAX=4 DSV4_BF16_PTOP=32 $B/bench_cpu --overlap;t16=env DSV4_BF16_PMAX=4 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b1c4k:--batch 1 --context 4096" "b16s:--batch 16 --stagger"
call_end

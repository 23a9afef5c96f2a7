#!/bin/sh
# s55 exp3/: exp2's part cap for BF16 linears at 4 (DSV4_BF16_PMAX=4), by the weights it takes
# (DSV4_BF16_PTILES=N: N row tiles of 32 or more): 32 (a CSA layer's compressor projections, 1,024 rows), 16
# (those and an HCA layer's, 512 rows), 8 (those, the indexer's compressor and the router's gate, 256 rows) against
# the default rule (P 8 for all of them). Decode at batch 1 / 16 / 64 / 1 x 4k, three rounds alternating.
# Pack: BASE=<f386fb5's build-gpu> KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin exp3
call_ab 3 "p8=$B/bench_cpu --overlap;t32=env DSV4_BF16_PMAX=4 DSV4_BF16_PTILES=32 $B/bench_cpu --overlap;t16=env DSV4_BF16_PMAX=4 DSV4_BF16_PTILES=16 $B/bench_cpu --overlap;t8=env DSV4_BF16_PMAX=4 DSV4_BF16_PTILES=8 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b1c4k:--batch 1 --context 4096"
call_end

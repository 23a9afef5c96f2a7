#!/bin/sh
# s55 exp2/: k_mma_bf16's part count for the larger BF16 linears of decode (DSV4_BF16_PMAX=N: weights of 16 row
# tiles or more at most N parts along K; the default's rule gives the compressors' projections 8: 656 blocks of
# two 64-column groups a warp, ~1 TB/s beside wq_b in a CSA layer). Decode at batch 1 / 16 / 1 x 4k, three rounds
# alternating, P 8 (default) / 4 / 2; node traces at batch 1 with 8 and 4. Bits: not the same by design (the
# parts' order is the sum's); the GPU tests with 4 (test_ops_cuda, test_gpu_vs_cpu) say whether it holds.
# Pack: BASE=<f386fb5's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin exp2
call_ab 3 "p8=$B/bench_cpu --overlap;p4=env DSV4_BF16_PMAX=4 $B/bench_cpu --overlap;p2=env DSV4_BF16_PMAX=2 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b1c4k:--batch 1 --context 4096"
call_trace p8-b1 "--batch 1"
export DSV4_BF16_PMAX=4
call_trace p4-b1 "--batch 1"
unset DSV4_BF16_PMAX
call_end

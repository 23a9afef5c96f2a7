#!/bin/sh
# s54 pair/: a CSA layer's two compressors side by side in decode (be->compress_pair: one k_compress launch, a
# block per (sequence, compressor); DSV4_CMP_PAIR=0: one after the other) and the pooling's loads of a column at
# once (coff 2, r <= 8), on ea96045 (the compressors' tails by warps). The whole suite with quick memchecks, the
# logits against ea96045's build byte for byte (gpu_verify.sh; test_ops_cuda's state scenario takes the pair on
# odd steps); decode, new / nopair (the same binary) / base (ea96045), two rounds; a node trace at batch 1.
# Pack: BASE=<build-gpu of ea96045> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pair
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_ab 2 "new=$B/bench_cpu --overlap;nopair=env DSV4_CMP_PAIR=0 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b1c4k:--batch 1 --context 4096"
call_trace new-b1 "--batch 1"
call_end

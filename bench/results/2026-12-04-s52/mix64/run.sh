#!/bin/sh
# s52: hc_post's mixing in 64-column blocks (k_hc_post64, a cluster of the four chunks of a part; ~27 KB of
# weights a block where k_hc_post's 256-column blocks stage ~100 KB, so it fits beside wo_b's k_wg8 blocks) -
# test_ops_cuda (its hc_post_next cases compare the mixing made in hc_post with k_hc_mix's, byte for byte), the
# logits against 3fcfa4e's build (v70's kernels) byte for byte with the 64-column blocks (the default) and with
# the 256-column ones (DSV4_HC_POST_MIX64=0), then decode: 64-column blocks everywhere (m1, the default) against
# 256-column ones (m0), three rounds alternating, the same binary; after wo_b only (m2) at batch 1; a node
# trace of batch 1.
# Pack: BASE=<build-gpu of 3fcfa4e> NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mix64
timeout 200 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "hc_post_next|FAIL|PASSED|FAILED" "$R/ops.txt" | head -12
gzip -9 -n "$R/ops.txt"
BITS_REPEAT=2 sh scripts/gpu_bits.sh
mv "$R/bits.txt" "$R/bits-m1.txt"
DSV4_HC_POST_MIX64=0 BITS_REPEAT=0 sh scripts/gpu_bits.sh
mv "$R/bits.txt" "$R/bits-m0.txt"
call_ab 3 "m1=$B/bench_cpu --overlap;m0=env DSV4_HC_POST_MIX64=0 $B/bench_cpu --overlap" "b1:--batch 1" "b8:--batch 8" "b16:--batch 16"
mv "$R/ab.txt" "$R/ab-m1m0.txt"
call_ab 2 "m2=env DSV4_HC_POST_MIX64=2 $B/bench_cpu --overlap;m1=$B/bench_cpu --overlap" "b1:--batch 1"
call_trace b1 "--batch 1"
call_end

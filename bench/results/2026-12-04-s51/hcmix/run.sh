#!/bin/sh
# s51: hc_post making the next hc_pre's / hc_head's mixing logits (hc_post_next; k_hc_mix off the chain between
# two sublayers at up to 8 tokens). The logits against fb7cf56's build (v69) byte for byte, test_ops_cuda (its
# hc_next cases), decode with and without (DSV4_HC_POST_MIX=0, the same binary) three rounds alternating, and a
# node trace at batch 1.
# Pack: KTRACE=1 NOTOK=1 BASE=<build-gpu of fb7cf56> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin hcmix
sh scripts/gpu_bits.sh
timeout 300 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1; echo "test_ops_cuda exit $?"
grep -E "hc_post_next|FAIL|NOT CAUGHT|PASSED" "$R/ops_cuda.txt" | head -20; gzip -9 -n "$R/ops_cuda.txt"
call_ab 3 "mix=$B/bench_cpu --overlap;nomix=env DSV4_HC_POST_MIX=0 $B/bench_cpu --overlap" "b1:--batch 1" \
  "b1c4k:--batch 1 --context 4096" "b2:--batch 2" "b8:--batch 8"
call_trace b1 "--batch 1"
call_end

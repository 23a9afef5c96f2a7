#!/bin/sh
# s51: hc_post's mixing up to 16 tokens (after tok16/): test_ops_cuda (its hc_post_next cases at 1-17 tokens),
# the logits against fb7cf56's build (v69) byte for byte, and decode at 16 and 12 against the bound of 8, two
# rounds.
# Pack: BASE=<build-gpu of fb7cf56> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bits16
timeout 300 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1; echo "test_ops_cuda exit $?"
grep -E "hc_post_next|FAIL|NOT CAUGHT|PASSED" "$R/ops_cuda.txt" | head -20; gzip -9 -n "$R/ops_cuda.txt"
sh scripts/gpu_bits.sh
call_ab 2 "t16=$B/bench_cpu --overlap;t8=env DSV4_HC_POST_MIX_TOK=8 $B/bench_cpu --overlap" "b16:--batch 16" \
  "b12:--batch 12"
call_end

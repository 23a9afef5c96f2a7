#!/bin/sh
# s51: hc_post's mixing at 16 tokens too (DSV4_HC_POST_MIX_TOK=16: 256 blocks of 105 KB, two an SM) against the
# default bound of 8 (batch 16 runs k_hc_mix), the same binary, three rounds at batch 16 (and 12).
# Pack: NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin tok16
call_ab 3 "t16=env DSV4_HC_POST_MIX_TOK=16 $B/bench_cpu --overlap;t8=$B/bench_cpu --overlap" "b16:--batch 16" \
  "b12:--batch 12"
call_end

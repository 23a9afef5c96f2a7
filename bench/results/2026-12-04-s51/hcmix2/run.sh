#!/bin/sh
# s51: hcmix/ with the mixing weights staged by cp.async (every copy in flight at once; hc_stage's four passes
# were four round trips after the blocks started: the fused k_hc_post took 6.2 us against 2.0 + k_hc_mix's 2.6).
# Decode with and without (DSV4_HC_POST_MIX=0, the same binary), three rounds alternating; a node trace at 1.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin hcmix2
call_ab 3 "mix=$B/bench_cpu --overlap;nomix=env DSV4_HC_POST_MIX=0 $B/bench_cpu --overlap" "b1:--batch 1" \
  "b8:--batch 8"
call_trace b1 "--batch 1"
call_end

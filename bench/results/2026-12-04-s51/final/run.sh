#!/bin/sh
# s51: hc_post's mixing after the routed experts only (DSV4_HC_POST_MIX=1, the default) - the whole GPU suite
# (every test, test_ops_cuda's hc_post_next cases with the mixing everywhere, the quick and Flash-shaped
# memchecks, logits against fb7cf56's build (v69) byte for byte), then decode with the mixing after the experts
# (1), everywhere (2) and never (0), the same binary, two rounds alternating.
# Pack: BASE=<build-gpu of fb7cf56> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
VERIFY_TIMEOUT=400 sh scripts/gpu_verify.sh | tail -16
call_ab 2 "m1=$B/bench_cpu --overlap;m2=env DSV4_HC_POST_MIX=2 $B/bench_cpu --overlap;m0=env DSV4_HC_POST_MIX=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b2:--batch 2" "b8:--batch 8"
call_end

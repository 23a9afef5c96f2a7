#!/bin/sh
# s36 call 5: hc_post_next + k_hc_post_mix (the hc_post before an hc_pre makes its mixing parts; the hc_pre
# skips k_hc_mix), DSV4_HC_FUSE=0 the baseline in the same binary. Pack: NOTOK=1 KTRACE=1 BASE=<a build of
# main b5c45a9>. The suite first (test_ops_cuda's hc_fuse cases: X, u, post, comb bit for bit against hc_post
# then hc_pre; the memchecks run it in Flash-shaped decode), the step's nodes at batch 1, then decode new /
# nofuse / base from the third step at batch 1 and 16, 3 rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin hcfuse
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
sh scripts/gpu_ktrace.sh b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu;nofuse=env DSV4_HC_FUSE=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

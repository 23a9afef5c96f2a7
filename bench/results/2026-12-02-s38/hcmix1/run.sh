#!/bin/sh
# Prepared in s38, NOT run (the device time ran out): wip/hc-post-mix1 - hc_post making the next hc_pre's mixing
# parts at k_hc_mix's own partition (a block a token's stream j x 256 columns: 24 KB of fn, as k_hc_mix's blocks;
# the four streams' blocks of those columns a cluster, each writing its own stream after the cluster's barrier),
# so hc_pre skips k_hc_mix (DSV4_HC_FUSE=0: as main). s36's heavier version (96 KB of fn a block) and s37's lighter
# one (four chunk sums a part) were slower; v49's bound for leaving k_hc_mix out: -46 us a step at batch 1.
# test_ops_cuda's hc_fuse cases compare the fused path with hc_post then hc_pre bit for bit. This call: those
# tests, the suite with the fusion on (and the logits against a main build), the step's nodes at batch 1, decode
# fused / DSV4_HC_FUSE=0 at 1, 2, 16 and 1 x 4k, 3 rounds. Pack: BASE=<a build-gpu of main> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin hcmix1
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "hc_post_next|PASSED|FAILED" $R/ops.txt | head
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;off=env DSV4_HC_FUSE=0 $B/bench_cpu --overlap" \
  timeout 300 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16" "b1-4k:--batch 1 --context 4096"
rm -f $R/ab-*.json
call_end

#!/bin/sh
# s77 l2p/: the weights read after two DRAM-idle kernels prefetched into L2 by those kernels
# (cp.async.bulk.prefetch.L2 over be->next_w, common.cuh l2pf_issue): k_attn_one's blocks prefetch wo_a once their
# rows are in (DSV4_ATTN_L2PF=1; 2 at their start, 3 at their end, 0 none) and the FFN's k_hc_post, launched early
# under the routed experts, the next layer's projections of h (DSV4_HC_L2PF=N: the first N of wq_a, wkv, the
# compressors' and the indexer's; 0 none). s76: wo_a starts when the attention ends and streams its 33.5 MB at ~1.75
# TB/s; s32's l2pf/ prefetched from a side stream beside the whole attention and was 2.8 % slower.
# - test_ops_cuda, test_gpu_vs_cpu, the logits against main's build (a prefetch changes no value);
# - node traces of the 64-step decode at batch 1, both on and both off;
# - decode at batch 1 / 16: all (the default), attn (hc off), hc (attn off), hc2 (wq_a + wkv only), pf3, off.
# Pack: AS=l2p BASE=/tmp/base-main KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh l2p=bench/results/2026-12-06-s77/l2p/run.sh (~6 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin l2p
call_ops "FAIL"
timeout 200 $B/test_gpu_vs_cpu > "$R/gpu_vs_cpu.txt" 2>&1
echo "test_gpu_vs_cpu exit $?"
grep -E "FAIL|\[  (PASSED|FAILED)" "$R/gpu_vs_cpu.txt" | head -5
gzip -9 -n "$R/gpu_vs_cpu.txt"
call_bits
call_snap
(export DSV4_ATTN_L2PF=0 DSV4_HC_L2PF=0; call_trace b1-off "--batch 1")
call_trace b1 "--batch 1"
call_snap
E="env DSV4_ATTN_L2PF"
call_ab 2 "all=$B/bench_cpu --overlap;attn=env DSV4_HC_L2PF=0 $B/bench_cpu --overlap;hc=$E=0 $B/bench_cpu --overlap;hc2=env DSV4_HC_L2PF=2 $B/bench_cpu --overlap;pf3=$E=3 $B/bench_cpu --overlap;off=$E=0 DSV4_HC_L2PF=0 $B/bench_cpu --overlap" "b1:--batch 1" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_end

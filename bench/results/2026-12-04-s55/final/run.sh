#!/bin/sh
# s55 final/: the session's tree (the review's mends; BF16 linears of 512 to 1,023 rows at most 4 parts along K)
# against the base build (f386fb5): the whole suite with quick memchecks and the logits byte for byte
# (gpu_verify.sh: its Flash-shaped cases have no HCA layer, so the cap's shape is not in them - test_ops_cuda's
# new linear cases are); decode at batch 1 / 16 / 64 / 1 x 4k and 16 staggered, new / cap off (DSV4_BF16_PCAP=0,
# the same binary) / base, three rounds alternating; the warm 4,096-token prefill, two rounds; a node trace at
# batch 1.
# Pack: BASE=<f386fb5's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_ab 3 "new=$B/bench_cpu --overlap;nocap=env DSV4_BF16_PCAP=0 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b1c4k:--batch 1 --context 4096" "b16s:--batch 16 --stagger"
call_prefill 2 "new=$B/bench_cpu;base=$B/bench_cpu.base"
call_trace new-b1 "--batch 1"
call_end

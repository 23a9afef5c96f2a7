#!/bin/sh
# (prepared in s35 on wip/sample-split, NOT run) k_sample's greedy pass split over up to 32 blocks a row (a quad
# a thread; the last block to finish reduces the parts and samples). Pack: NOTOK=1 KTRACE=1 BASE=<a build of
# main's head>. First the bits (test_sample_cuda: every setting against the contract, ties and NaN rows, the
# 129,280-id rows now split 32 ways; then the suite with its memchecks), then k_sample between two steps under
# KTRACE_MODE=graph (11.8 us before) and decode new / base from the third step, 3 rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin sample-split
timeout 120 $B/test_sample_cuda > $R/sample.txt 2>&1; echo "sample exit $?"; grep -E "agree|PASSED|FAILED" $R/sample.txt
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
KT_MODE=graph sh scripts/gpu_ktrace.sh new-b1 "$B/bench_cpu $BC"
KT_MODE=graph sh scripts/gpu_ktrace.sh base-b1 "$B/bench_cpu.base $BC"
AB_REPEAT=3 AB_DECODE=64 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

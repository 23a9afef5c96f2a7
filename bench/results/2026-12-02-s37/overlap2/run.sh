#!/bin/sh
# s37 call 3: call 2's build with bench_cpu's steady figure for --overlap taken from the moment the second step's
# picks are read (call 2 took it before the third step's submit, while the device still ran the second - the
# graph's capture step - so its figure carried part of that step). Pack: LEAN=1 NOTOK=1 KTRACE=1. Decode
# overlapped / one at a time, 3 rounds, batch 1 / 2 / 16 / 64; the steps overlapped at batch 16 (KT_MODE=graph).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin overlap2
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 16"
KT_MODE=graph sh scripts/gpu_ktrace.sh ov-b16 "$B/bench_cpu $BC --overlap"
KT_MODE=graph sh scripts/gpu_ktrace.sh sync-b16 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;sync=$B/bench_cpu" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16" "b64:--batch 64"
rm -f $R/ab-*.json
call_end

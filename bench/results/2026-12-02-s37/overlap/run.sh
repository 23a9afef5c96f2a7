#!/bin/sh
# s37 call 2: overlapped decode steps (dsv4_step_submit / dsv4_step_finish, follow entries fed on the device by
# k_tok_feed from the previous step's sample slot). Pack: NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh. The suite
# (with test_overlap on the GPU and under memcheck), the steps between two replays overlapped / not
# (KT_MODE=graph), decode overlapped / one at a time, 3 rounds, batch 1 / 2 / 16 / 64.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin overlap
VERIFY_TIMEOUT=360 sh scripts/gpu_verify.sh
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
KT_MODE=graph sh scripts/gpu_ktrace.sh ov-b1 "$B/bench_cpu $BC --overlap"
KT_MODE=graph sh scripts/gpu_ktrace.sh sync-b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;sync=$B/bench_cpu" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16" "b64:--batch 64"
rm -f $R/ab-*.json
call_end

#!/bin/sh
# s39: stream priorities for the decode graph's two queues (DSV4_QUEUE_PRIO: 1 the main queue - the step's
# chain: wq_a, wq_b, attention, wo_a / wo_b, the router and the routed experts - at the greatest priority, the
# side queue - the compressors, KV path, kv_store, the shared expert, hc's post / comb - at the least; 2 the
# other way round; unset: both default, as before). The graph keeps each node's capture-stream priority
# (cudaGraphInstantiateFlagUseNodePriority). Decode at 1, 2, 16 and 1 x 4k, 3 rounds alternating, and the
# nodes at batch 1 under each. Pack: LEAN=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin prio
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1"
sh scripts/gpu_ktrace.sh p0-b1 "$B/bench_cpu $BC"
DSV4_QUEUE_PRIO=1 sh scripts/gpu_ktrace.sh p1-b1 "$B/bench_cpu $BC"
DSV4_QUEUE_PRIO=2 sh scripts/gpu_ktrace.sh p2-b1 "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;p1=env DSV4_QUEUE_PRIO=1 $B/bench_cpu --overlap;p2=env DSV4_QUEUE_PRIO=2 $B/bench_cpu --overlap" \
  timeout 400 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16" "b1-4k:--batch 1 --context 4096"
rm -f $R/ab-*.json
call_end

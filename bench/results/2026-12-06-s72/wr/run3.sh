#!/bin/sh
# s72 wr/ third, same warm machine: the reservation at Flash shapes - decode steps at a 1M-token context (bench_cpu
# --context: the prompt ends at that position) on 2 Flash-shaped layers, batch 4, and the same at 128k, batch 16,
# against the base build (no reservation), one round each.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wr3
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
for v in new:bench_cpu base:bench_cpu.base; do
  for c in 1040000:4 131072:16; do
    timeout 120 $B/${v#*:} -m /tmp/f2 --backend cuda --numerics reference --fill-random --prompt 16 --decode 16 \
      --overlap --context ${c%%:*} --batch ${c#*:} > "$R/ctx-${v%%:*}-${c%%:*}.txt" 2>&1
    echo "${v%%:*} context ${c%%:*} batch ${c#*:}: exit $?"
    grep -E "ms/step|KV pool|error|out of memory" "$R/ctx-${v%%:*}-${c%%:*}.txt" | head -4
  done
done
call_end

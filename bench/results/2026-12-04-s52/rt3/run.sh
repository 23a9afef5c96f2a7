#!/bin/sh
# s52 rt3: rt2's probe 2 again with the route and the plan as one copy of their code each (__noinline__ in the
# -DROUTE_TRACE build), so the warm-up runs the very instructions the last block then runs: if the route and
# the plan then take their ~2 us of work, the tail's time was the fetch of its cold code. The last launch of a
# 64-step decode at batch 1 and 8, two runs each.
# Pack: BASE=<a -DROUTE_TRACE build-gpu of this tree> NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rt3
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for i in 1 2; do
  for fl in 0 2; do
    for bs in 1 8; do
      DSV4_ROUTE_TRACE_FLAGS=$fl timeout 120 $B/bench_cpu.base -m /tmp/f8 --backend cuda --numerics reference \
        --fill-random --prompt 16 --decode 64 --overlap --batch $bs > "$R/trace-f$fl-b$bs-$i.txt" 2>&1
      echo "== flags $fl b$bs run $i exit $? $(grep -o '[0-9.]* ms/step from the third' "$R/trace-f$fl-b$bs-$i.txt")"
      grep "last 1" "$R/trace-f$fl-b$bs-$i.txt"
    done
  done
done
call_end

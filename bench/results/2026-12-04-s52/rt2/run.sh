#!/bin/sh
# s52 rt2: the last k_mma_bf16_route block's phases in finer steps (after the fence, the route, the plan), and
# two probes of the -DROUTE_TRACE build (DSV4_ROUTE_TRACE_FLAGS): 1 no fence after the count, 2 every block
# running the route and the plan on constants before its linear (the tail's code warm in the caches); the last
# launch of a 64-step decode at batch 1 and 8, three runs each.
# Pack: BASE=<a -DROUTE_TRACE build-gpu of this tree> NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rt2
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for i in 1 2 3; do
  for fl in 0 1 2; do
    for bs in 1 8; do
      DSV4_ROUTE_TRACE_FLAGS=$fl timeout 120 $B/bench_cpu.base -m /tmp/f8 --backend cuda --numerics reference \
        --fill-random --prompt 16 --decode 64 --overlap --batch $bs > "$R/trace-f$fl-b$bs-$i.txt" 2>&1
      echo "== flags $fl b$bs run $i exit $? $(grep -o '[0-9.]* ms/step from the third' "$R/trace-f$fl-b$bs-$i.txt")"
      grep "last 1" "$R/trace-f$fl-b$bs-$i.txt"
    done
  done
done
call_end

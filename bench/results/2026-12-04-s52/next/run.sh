#!/bin/sh
# Prepared by s52 for the next call (KERNEL_NOTES "State after s52", next step 1): where k_route's ~5.9 us after
# the gate go - a -DROUTE_TRACE build (carried as bench_cpu.base) prints, for the last k_route launch of a
# 64-step decode (a top-k layer), each token's warp's %globaltimer at entry, after griddepcontrol.wait, after its
# scores (the loads in), after the rounds and at the end ("kroutetrace TOKEN sm SM T0 .. T4", us from the
# launch's first entry), at batch 1 and 8, three runs each; and the same build's decode step beside this one's
# (the stamps' cost).
# Pack: BASE=<build-gpu of this tree with -DCMAKE_CUDA_FLAGS=-DROUTE_TRACE> NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for i in 1 2 3; do
  for bs in 1 8; do
    timeout 120 $B/bench_cpu.base -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 \
      --decode 64 --overlap --batch $bs > "$R/trace-b$bs-$i.txt" 2>&1
    echo "== b$bs run $i exit $? $(grep -o '[0-9.]* ms/step from the third' "$R/trace-b$bs-$i.txt")"
    grep kroutetrace "$R/trace-b$bs-$i.txt" | head -3
  done
done
call_ab 2 "plain=$B/bench_cpu --overlap;traced=$B/bench_cpu.base --overlap" "b1:--batch 1"
call_end

#!/bin/sh
# s52: why the router in its linear's last block (route/) made batch 1 slower - the block timeline of the last
# k_mma_bf16_route launch of a 64-step decode (a -DROUTE_TRACE build carried as bench_cpu.base: each block's
# %globaltimer at entry, after the linear, after its count; the last block's after the route and the plan), then
# decode with the route and plan fused (default), the route alone fused (DSV4_ROUTE_FUSE_PLAN=0) and neither
# (DSV4_ROUTE_FUSE=0), the same binary, rounds alternating.
# Pack: BASE=<a -DROUTE_TRACE build-gpu of this tree> NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rt
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for bs in 1 8; do
  timeout 120 $B/bench_cpu.base -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 64 \
    --overlap --batch $bs > "$R/trace-b$bs.txt" 2>&1
  echo "== trace b$bs exit $?"
  grep -E "last 1|ms/step" "$R/trace-b$bs.txt"
  grep routetrace "$R/trace-b$bs.txt" | sort -k8 -n | tail -3
done
call_ab 3 "fuse=$B/bench_cpu --overlap;noplan=env DSV4_ROUTE_FUSE_PLAN=0 $B/bench_cpu --overlap;nofuse=env DSV4_ROUTE_FUSE=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b8:--batch 8"
call_end

#!/bin/sh
# s46 call 2: s44's fuse-next on wip/wg8-fuse (k_wg8 packing its own tokens' codes at batch 1-2, the real tokens
# only, the padding zero-filled). Pack on the branch's wg8.cu over main 9a25d08: BASE=<main's build-gpu at 9b93896>
# NOTOK=1 sh scripts/gpu_pack.sh. The whole suite (its gpu_bits against main: identical expected), decode b1 / b16
# / b1 at a 4k context fused ("new") / DSV4_WG8_FUSE=0 ("off", the same binary) / main ("base"), 3 rounds, then
# ncu on two k_wg8 launches of a batch-1 step each way.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin fuse
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh | tail -12
call_ab 3 "new=$B/bench_cpu --overlap;off=env DSV4_WG8_FUSE=0 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b1c4k:--batch 1 --context 4096"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for k in fused off; do
  e=; [ $k = off ] && e=DSV4_WG8_FUSE=0
  env $e timeout 100 ncu --graph-profiling node -k regex:k_wg8 --launch-skip 200 --launch-count 2 \
    --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --print-details all \
    $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 8 --batch 1 \
    > "$R/ncu-$k.txt" 2>&1
  echo "== ncu $k"; grep -E "k_wg8|Duration|Warp Cycles Per Issued" "$R/ncu-$k.txt" | head -12
done
call_end

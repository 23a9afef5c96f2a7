#!/bin/sh
# s49 call 2 (same pack as verify/): decode new (v67 + div64) / base (v67), two rounds alternating, at 1 x 4k,
# 1 x 128k, 16 x 128k, 1 x ~1M; then v67's cluster top-k against DSV4_IX_CL=0 at 1 x ~1M and 16 x 512k (s48's
# next/ second round).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin decode
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1c128k:--batch 1 --context 131072" \
  "b16c128k:--batch 16 --context 131072" "b1c1m:--batch 1 --context 1040000"
snap
call_ab 1 "cl=$B/bench_cpu.base --overlap;one=env DSV4_IX_CL=0 $B/bench_cpu.base --overlap" "cl-b1c1m:--batch 1 --context 1040000" \
  "cl-b16c512k:--batch 16 --context 524288"
call_end

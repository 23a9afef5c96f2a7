#!/bin/sh
# s57 bp/: the experts' tiles of 2 pairs (moe16_bp2, batch 4-12 by default) again, now that the down projection
# takes two row blocks from batch 4 (e958cbb): the default against whole 8-pair tiles (bp0: DSV4_MOE_BP=0) at
# batch 4 / 6 / 8 / 12, three rounds, one binary.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bp
call_ab 3 "new=$B/bench_cpu --overlap;bp0=env DSV4_MOE_BP=0 $B/bench_cpu --overlap" "b4:--batch 4" "b6:--batch 6" "b8:--batch 8" "b12:--batch 12"
call_end

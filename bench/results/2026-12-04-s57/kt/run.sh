#!/bin/sh
# s57 kt/: node traces of c310eef (the one-row-block experts' tile read with the count) - a 64-step decode on 8
# Flash layers at batch 1 (16-token context), 1 x 4k (CSA's indexer selecting) and batch 4: where a batch-1
# layer's time goes now (s51's kt/ was the last batch-1 trace; s52-s57 changed the router's chain, the
# compressors and the experts). Then the two-row-block threshold again (MOE_RB_WAVES 5: Flash's batch 7 on) with
# the one-row-block kernels faster: batch 6 / 7 / 8, the rule (new) against one row block everywhere
# (rb1: DSV4_MOE_RB=1), three rounds.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin kt
call_trace b1 "--batch 1"
call_trace b1c4k "--batch 1 --context 4096"
call_trace b4 "--batch 4"
call_ab 3 "new=$B/bench_cpu --overlap;rb1=env DSV4_MOE_RB=1 $B/bench_cpu --overlap" "b6:--batch 6" "b7:--batch 7" "b8:--batch 8"
call_end

#!/bin/sh
# s57 rbsplit/: two row blocks a block for one projection only at small batches. kt/'s batch-1 trace: after the
# routed gate / up, the shared expert's w2 and the routed down projection (35 MB) take ~18 us on the step's path
# (~1.9 TB/s); the down kernel's 768 blocks are 1.45 waves of four an SM and each warp walks only 4 groups of K.
# Knobs of this build (rbsplit.diff): DSV4_MOE_RB_DN / DSV4_MOE_RB_GU set the row blocks of the down / gate-up
# kernels alone. Decode at batch 1 / 2 / 4, three rounds: the rule (new), down with two (dn2), gate / up with two
# (gu2); then the experts alone at 1 / 2 / 4 tokens, two rounds each way.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rbsplit
call_ab 3 "new=$B/bench_cpu --overlap;dn2=env DSV4_MOE_RB_DN=2 $B/bench_cpu --overlap;gu2=env DSV4_MOE_RB_GU=2 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b2:--batch 2" "b4:--batch 4"
call_kernels experts 2 "new=$B/bench_kernels;dn2=env DSV4_MOE_RB_DN=2 $B/bench_kernels;gu2=env DSV4_MOE_RB_GU=2 $B/bench_kernels" "--experts-only --batch 1,2,4"
for f in "$R"/experts-*.txt; do echo "$f"; grep -h "experts (ref.) " "$f"; done
call_end

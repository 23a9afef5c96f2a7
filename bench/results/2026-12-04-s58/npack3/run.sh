#!/bin/sh
# s58 npack3/: where k_rmsnorm_pack lets the linear after it launch (griddepcontrol.launch_dependents), a knob
# for this call (DSV4_NORM_PACK_TRIG): after its PDL wait (new: the rmsnorm op's place), at its start (t0, 3:
# npack2/'s), after its last store (t2); against the norm and the pack as two launches (np0: DSV4_NORM_PACK=0).
# Decode at batch 1 / 16 / 64, two rounds, one binary.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin npack3
call_ab 2 "new=$B/bench_cpu --overlap;t0=env DSV4_NORM_PACK_TRIG=3 $B/bench_cpu --overlap;t2=env DSV4_NORM_PACK_TRIG=2 $B/bench_cpu --overlap;np0=env DSV4_NORM_PACK=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
call_end

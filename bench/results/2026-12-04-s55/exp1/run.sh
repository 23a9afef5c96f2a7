#!/bin/sh
# s55 exp1/: two knobs of one binary (the tree on f386fb5 with k_embed16 under PDL and the routed experts' Y
# memset skipped where every expert is this rank's): default (new) against DSV4_EMB_PDL=0 (emb0: k_embed16
# launched plainly, as before) and DSV4_MOE_YZERO=1 (yz: the memset node back), and the base build (f386fb5).
# Decode at batch 1 / 16, three rounds alternating; a node trace at batch 1 (the step's first gap: k_embed16
# to k_hc_mix 8.8 us in s54's traces); the logits against the base build byte for byte.
# Pack: BASE=<f386fb5's build-gpu> KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin exp1
call_ab 3 "new=$B/bench_cpu --overlap;emb0=env DSV4_EMB_PDL=0 $B/bench_cpu --overlap;yz=env DSV4_MOE_YZERO=1 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b16:--batch 16"
call_trace new-b1 "--batch 1"
BITS_REPEAT=1 sh scripts/gpu_bits.sh
call_end

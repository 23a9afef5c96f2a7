#!/bin/sh
# Bounds, not changes (exp/skip, a throwaway build of bea7e10: DSV4_SKIP=name,... leaves kernels out of the
# decode graphs; their outputs stay as the uncaptured step left them: wrong results, the same work): what the
# router's two launches cost on batch 1 / 2's chain - k_route, k_moe_plan, both - and k_hc_mix for
# reference (s22's ablate: 1.9 us a launch). 8 Flash layers, reference numerics, prompt 16, 32 steps, 3 rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin skip
b=$B/bench_cpu
AB_BINS="new=$b;plan=env DSV4_SKIP=k_moe_plan $b;route=env DSV4_SKIP=k_route $b;rp=env DSV4_SKIP=k_route,k_moe_plan $b;mix=env DSV4_SKIP=k_hc_mix $b" \
  AB_REPEAT=3 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2"
cat $R/ab.txt
call_end

#!/bin/sh
# Prepared in s40, NOT run (the device time ran out): wip/mma-fp8-ntt (d9d8a11, on 5fb6d82; also ntt.diff here,
# which applies on main) - k_mma_fp8's n tiles' MMA chains side by side at 9-32 tokens (wo_a at batch 16, the
# reference's only LO linear; plain numerics' FP8 linears too): four chains in flight at two n tiles instead of
# one tile's two then the other's, as v60 did for k_mma_fp8s at 1-8 tokens (wo_a advanced ~1.2 us a layer less
# there). The same MMAs in the same order per tile: the suite's batch-invariance cases (12 tokens on k_mma_fp8
# against each token alone on k_mma_fp8s) hold the bits. Expected: wo_a at batch 16 a few us a layer faster
# (28.6 us a layer at 1.25 TB/s in v51), decode at 16 ~0.5 %. This call: the suite (logits against .base), a node
# trace at batch 16, decode new / base at batch 16 and 12 (3 rounds).
# Run from the branch's tree (or main with ntt.diff applied); pack: BASE=<a build of main> NOTOK=1 KTRACE=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ntt
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
call_trace new-b16 "--batch 16"
grep -E "k_mma_fp8<" $R/kt-new-b16.txt | head -8
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b16:--batch 16" "b12:--batch 12"
call_end

#!/bin/sh
# s61 wts/: k_attn_one's weights phase shortened (the one-token path, CSA 4k 10.4-11.2 us alone against the
# < 10 target). rot/'s per-warp stamps put the phase at ~2,100 cycles: the part max ~650 (two dependent loads, a
# butterfly of five shuffles), the sum and weights ~750 (the same pairs loaded again), the remote stores ~200 (mapa
# each), a zero head's fragments ~450 (one8: the MMA's rows 8-15); icache/'s build that ran it twice took as long
# the second time, so not its code fetch. Now: the pairs loaded once for both, the max by __reduce_max_sync on
# ordered integers (exact: the same max), the zero fragments and the owners' addresses before the PDL wait.
# Claimed: the same bits. The whole suite with the base's dsv4 (main's build: the logits byte for byte), the new
# kernel's phases (an AF_TRACE build, bench_kernels.trace), attention alone at 1 / 2 tokens against main's build
# alternating, then decode at batch 1 and 1 x 4k against it.
# PREPARED, NOT run (the device was not lent again after icache/): run it on branch wip/one-weights.
# Pack there: cmake -S . -B build-trace -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DAF_TRACE;
#   cmake --build build-trace --target bench_kernels; BASE=<a build-gpu of main> KTRACE=1 NOTOK=1 sh
#   scripts/gpu_pack.sh; xz -9 -c build-trace/bench_kernels > .gpu/bk-trace.xz   (move older records aside: the tree
#   that travels is limited to 64 MiB)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wts
call_verify
call_memcheck k_attn_one "--attn-only --batch 1,2 --reps 1" # (one8 at 1 token, one at 2: s62's review)
call_aftrace
call_kernels attn 3 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,2"
call_attn_ab new base
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1x4k:--batch 1 --context 4096"
call_end

#!/bin/sh
# s61 mrg/ (PREPARED, NOT run): the three prepared changes' bits in one call, on branch wip/s61-merge (main with
# wip/one-weights, wip/qkw-rows and wip/pvw-wg merged) - the device-frugal alternative to wts/, qkw/ and pvw2/ one
# by one. The whole suite with both switches on (DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1; k_attn_one's change has none): the
# logits against main's dsv4 byte for byte, and test_ops_cuda's tuned choices bit for bit - a failure there names
# the choice, which names the change (one / one8: wip/one-weights; score_rows 64: k_attn_qkw; wg64: k_attn_pvw with
# two warpgroups). Then a memcheck of each new kernel and k_attn_one's phases (an AF_TRACE build of the merge), with
# and without DSV4_ATTN_ROT=1 (the merge branch's: rot/'s void question again). The timings are mrg2/'s.
# Pack (on the branch): cmake -S . -B build-trace -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release
#   -DCMAKE_CUDA_FLAGS=-DAF_TRACE; cmake --build build-trace --target bench_kernels; BASE=<a build-gpu of main>
#   KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh; xz -9 -c build-trace/bench_kernels > .gpu/bk-trace.xz  (move older
#   records aside: the tree that travels is limited to 64 MiB)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mrg
call_verify DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1
export DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1 # (an assignment before a shell function's name does not reach it everywhere)
call_memcheck k_attn_qkw "--attn-only --batch 16 --reps 1"
call_memcheck k_attn_pvw "--attn-only --batch 16 --reps 1"
call_memcheck k_attn_one "--attn-only --batch 1,2 --reps 1" # (one8 at 1 token, one at 2: s62's review)
unset DSV4_ATTN_QKW DSV4_ATTN_PVW2
call_snap
call_aftrace
call_aftrace trace-rot DSV4_ATTN_ROT=1 # rot/'s question: the part's rows issued from each head group's own offset
call_end

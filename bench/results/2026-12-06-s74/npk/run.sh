#!/bin/sh
# s74 npk/ (prepared, NOT GPU-run; after kt/: at batch 1 the FP8 linears' 5 activation packs a layer advance the
# step ~10 us a layer, and s58 found that fusing a pack's launch into the kernel before it gained nothing). Is the
# hop worth removing at all? *.base: a probe build of the bundle's tree with npk/npk.diff under -DWG_PROBE_NO_PACK -
# no k_wg8_pack in a captured graph, k_wg8 reading the codes the eager steps left in its own scratch (wrong values,
# finite: timing only), so each FP8 linear chains on the kernel before its pack. The step's gain is the most that
# k_wg8 quantising its own activations (KERNEL_NOTES s74 "Next") could buy.
# - decode on 8 Flash-shaped layers at batch 1 / 4 / 16, three rounds, the tree against the probe.
# Build the probe: cmake -S . -B /tmp/build-npk -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
#   -DCMAKE_CUDA_FLAGS=-DWG_PROBE_NO_PACK (with npk.diff applied to a copy of the tree; ~8 min), then
#   cmake --build /tmp/build-npk --target bench_cpu bench_kernels dsv4
# Pack: AS=npk BASE=/tmp/build-npk LEAN=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh npk=bench/results/2026-12-06-s74/npk/run.sh (~3 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin npk
call_ab 3 "new=$B/bench_cpu --overlap;probe=$B/bench_cpu.base --overlap" "b1:--batch 1" "b4:--batch 4" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_end

#!/bin/sh
# s68 bulk/ (main at the bundle's commit; the base build f3c796b as *.base): pipe/ ran k_attn_one's copies from two
# warps while six took the scores as the copies landed - the same bits, 45 % slower at CSA 1 x 4k (the copies issue
# slower from fewer warps). Now the compressed rows go by the bulk copy engine, a thread a row, each on its 16-row
# group's mbarrier (rows padded and permuted: s27's af_krow layout), and all eight warps take each 8-row tile's
# scores once its group has landed. The same checks and timings as pipe/ (DSV4_ATTN_ONE_PIPE=0 the same binary
# without it, and the base build).
# Pack: AS=bulk BASE=/tmp/base-gpu sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bulk
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_ops "attn|one"
call_bits
call_memcheck k_attn_one "--attn-only --batch 1,3 --reps 1"
call_snap
call_kernels attn 2 "pipe=$B/bench_kernels;off=env DSV4_ATTN_ONE_PIPE=0 $B/bench_kernels;base=$B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,32768,131072"
call_attn_ab pipe off base
call_snap
call_ab 3 "pipe=$B/bench_cpu --overlap;off=env DSV4_ATTN_ONE_PIPE=0 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072"
cat "$R/ab.txt" 2>/dev/null
call_end

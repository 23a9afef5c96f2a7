#!/bin/sh
# s68 bulk2/ (main at the bundle's commit; the base build f3c796b as *.base): bulk/ issued every compressed row's
# bulk copy at once - the same bits, CSA 1 x 4k even (10.49-10.55 against 10.49-10.51 us): the rows share the SM's
# intake and land together, so the scores had nothing to overlap. Here the last warp issues a 16-row group at a time
# with at most 2 (DSV4_ATTN_ONE_NF; 3 and 1 too) groups in flight, so that the groups land one after another, while
# seven warps take each tile's scores once its group has landed. test_ops_cuda, the logits against the base's,
# memcheck, then the attention alone at 1-3 tokens PIPE nf 2 / nf 3 / nf 1 / off (DSV4_ATTN_ONE_PIPE=0), and decode
# at batch 1 (4k, 128k) nf 2 against off.
# Pack: AS=bulk2 BASE=/tmp/base-gpu sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bulk2
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_ops "attn|one"
call_bits
call_memcheck k_attn_one "--attn-only --batch 1,3 --reps 1"
call_snap
call_kernels attn 2 "nf2=$B/bench_kernels;nf3=env DSV4_ATTN_ONE_NF=3 $B/bench_kernels;nf1=env DSV4_ATTN_ONE_NF=1 $B/bench_kernels;off=env DSV4_ATTN_ONE_PIPE=0 $B/bench_kernels" \
  "--attn-only --batch 1,2,3 --contexts 4096,32768,131072"
call_attn_ab nf2 nf3 nf1 off
call_snap
call_ab 2 "nf2=$B/bench_cpu --overlap;off=env DSV4_ATTN_ONE_PIPE=0 $B/bench_cpu --overlap" \
  "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072"
cat "$R/ab.txt" 2>/dev/null
call_end

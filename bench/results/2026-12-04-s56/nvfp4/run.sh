#!/bin/sh
# s56 nvfp4/: two row blocks a block for NVFP4's routed experts (NVIDIA's ModelOpt re-quantisation), which the
# rule leaves at one (measured for MXFP4 only): 8 Flash-shaped layers with NVFP4 experts (dsv4 mkmodel --experts
# nvfp4), reference numerics, decode at batch 8 / 16 / 64, DSV4_MOE_RB=2 (rb2) against the default (one row
# block), two rounds alternating; the landed tree's binary (dd9d452's kernels). (gpu_ab.sh adds --fill-random only to
# the model it makes itself: the first try of this call ran nothing.)
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin nvfp4
$B/dsv4 mkmodel --preset flash --layers 8 --experts nvfp4 --sparse -o /tmp/f8n > "$R/mkmodel.txt" 2>&1
export AB_MODEL=/tmp/f8n
call_ab 2 "rb2=env DSV4_MOE_RB=2 $B/bench_cpu --overlap --fill-random;new=$B/bench_cpu --overlap --fill-random" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
call_end

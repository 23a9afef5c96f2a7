#!/bin/sh
# s56 nvfp4b/: the rule extended to NVFP4's experts (two row blocks a block from 5 waves of tiles, as MXFP4's since
# final/) against one row block everywhere (DSV4_MOE_RB=1) in the same binary: 8 Flash-shaped layers with NVFP4
# experts, reference numerics, decode at batch 1 / 4 / 8 / 16, two rounds alternating.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin nvfp4b
$B/dsv4 mkmodel --preset flash --layers 8 --experts nvfp4 --sparse -o /tmp/f8n > "$R/mkmodel.txt" 2>&1
export AB_MODEL=/tmp/f8n
call_ab 2 "new=$B/bench_cpu --overlap --fill-random;rb1=env DSV4_MOE_RB=1 $B/bench_cpu --overlap --fill-random" "b1:--batch 1" "b4:--batch 4" "b8:--batch 8" "b16:--batch 16"
call_end

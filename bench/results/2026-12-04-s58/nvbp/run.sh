#!/bin/sh
# s58 nvbp/: the experts' 2-pair tiles (moe16_bp2: MXFP4 at batch 4 only; NVFP4's experts never take them by
# default and were never measured with them) forced on 8 Flash layers with NVFP4 experts (bp1: DSV4_MOE_BP=1)
# against the tree's 8-pair tiles (new), decode at batch 2 / 3 / 4 / 5 / 6, three rounds; 4e84d0b's build.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin nvbp
$B/dsv4 mkmodel --preset flash --layers 8 --experts nvfp4 --sparse -o /tmp/f8n > "$R/mkmodel.txt" 2>&1
(export AB_MODEL=/tmp/f8n; call_ab 3 "new=$B/bench_cpu --overlap --fill-random;bp1=env DSV4_MOE_BP=1 $B/bench_cpu --overlap --fill-random" \
  "b2:--batch 2" "b3:--batch 3" "b4:--batch 4" "b5:--batch 5" "b6:--batch 6")
call_end

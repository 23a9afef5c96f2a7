#!/bin/sh
# s57 dn4/: the routed experts' down projection with two row blocks a block from 4 waves of tiles
# (MOE_RB_WAVES_DN; gate / up keep 5): Flash's batch 4 (4.4 waves) now takes them for the down projection alone;
# batch 5 on took both before. Against c310eef's build: the whole suite with quick memchecks (one pass forces two
# row blocks everywhere) and the logits byte for byte; decode at batch 3 / 4 / 5, three rounds; then 8 layers
# with NVFP4 experts at batch 4, three rounds.
# Pack: BASE=<c310eef's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin dn4
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b3:--batch 3" "b4:--batch 4" "b5:--batch 5"
$B/dsv4 mkmodel --preset flash --layers 8 --experts nvfp4 --sparse -o /tmp/f8n > "$R/mkmodel.txt" 2>&1
(export AB_MODEL=/tmp/f8n; call_ab 3 "new=$B/bench_cpu --overlap --fill-random;base=$B/bench_cpu.base --overlap --fill-random" "b4n:--batch 4")
call_end

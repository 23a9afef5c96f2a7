#!/bin/sh
# s57 bp4/: the experts' 2-pair tiles at batch 4 only (MOE_BP2_MAX 12 -> 4, after bp/) against 6bfd9b3's build:
# test_ops_cuda (its expert cases check both tile sizes), then decode at batch 4 / 5 / 6 / 12, two rounds.
# Pack: BASE=<6bfd9b3's build-gpu> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bp4
echo "== every CUDA op against its CPU twin"; timeout 200 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1; echo "exit $?" >> "$R/ops_cuda.txt"; grep -E "FAIL|PASSED|exit" "$R/ops_cuda.txt"
gzip -f "$R/ops_cuda.txt"
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b4:--batch 4" "b5:--batch 5" "b6:--batch 6" "b12:--batch 12"
call_end

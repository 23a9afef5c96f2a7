#!/bin/sh
# On the GPU machine (after `KTRACE=1 sh scripts/gpu_pack.sh`): one run of COMMAND under bench/ktrace.c (CUPTI's
# kernel timeline) into $OUT/kt-TAG.csv.gz (the weight fill's kernels left out) and bench/ktrace.py's table
# of it into $OUT/kt-TAG.txt, whose first lines it prints. KT_MODE: nodes (default: every graph node; the
# host's launches get slow, so only the in-graph table is worth reading), graph (each launch one record, and
# what runs between steps) or api (the host's runtime calls too). More arguments go to ktrace.py (default
# --step 30 for graph / api, --nodes for nodes).
#
#   KT_MODE=graph sh scripts/gpu_ktrace.sh new-b1 ".gpu/bench_cpu -m /tmp/f8 --backend cuda --fill-random --batch 1"
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
tag=$1 cmd=$2
shift 2
mode=${KT_MODE:-nodes}
[ -f $B/libktrace.so ] || { echo "gpu_ktrace: no $B/libktrace.so (pack with KTRACE=1)"; exit 1; }
if [ $# -eq 0 ]; then if [ "$mode" = nodes ]; then set -- --nodes; else set -- --step 30; fi; fi
m=$mode; [ "$m" = nodes ] && m=
# shellcheck disable=SC2086
KTRACE_MODE=$m CUDA_INJECTION64_PATH=$PWD/$B/libktrace.so KTRACE_OUT=$OUT/kt-$tag.csv timeout 120 $cmd \
  > "$OUT/kt-$tag.log" 2>&1
python3 bench/ktrace.py "$OUT/kt-$tag.csv" "$@" > "$OUT/kt-$tag.txt" 2>&1
echo "== $tag ($mode)"; head -3 "$OUT/kt-$tag.txt"
grep -v synth_fill_kernel "$OUT/kt-$tag.csv" | gzip -9 -n > "$OUT/kt-$tag.csv.gz" && rm "$OUT/kt-$tag.csv"

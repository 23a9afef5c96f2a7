#!/bin/sh
# On the GPU machine (after scripts/gpu_pack.sh): the head figures a session closes with, into $OUT —
# decode at batch 1 / 8 / 16 / 64, one sequence at a 4k context (the indexer's selection on the critical path,
# which a 16-token prompt never reaches) and 16 at a 128k context, HEAD_RUNS runs each (default 2; 8
# Flash layers, reference numerics, prompt 16, 32 steps: d<B>-c<C>-<i>.txt), a 4,096-token prefill
# HEAD_RUNS times after an untimed one in the same process (--warm-prefill since v63: a process's first prefill
# pays one-off costs, ~6 ms ours, ~27 with cuBLASLt), ours (pf-<i>.txt) and --prefill-gemm cublaslt
# (pf-lt-<i>.txt) alternating, one line each into $OUT/summary.txt (what bench/results/summary_lib.head
# reads), and with HEAD_SERVE=1 (default) dsv4 serve on the same 8 layers driven by dsv4 bench at
# concurrency 1 / 8 / 16 / 64 (gpu_suite.sh's SERVE_FLASH: serve-flash-c*.json), and with HEAD_SERVE_LONG=1
# (default) 4,000-token prompts at 1 / 4, ours and --prefill-gemm cublaslt (serve-flash-long[-lt]-c*.json). The
# machine's clocks into $OUT/machine.txt. Unpacks the bundle when it is not yet (scripts/gpu_env.sh). More than 8
# files (the device tool returns 8) go back as $OUT/head.tgz beside summary.txt: unpack it where summary_lib.head
# reads the call's folder.
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$OUT/machine.txt" 2>&1
T=$(mktemp -d)
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$T/f8" > /dev/null 2>&1 || { echo "gpu_head: mkmodel failed"; exit 1; }
BC="-m $T/f8 --backend cuda --fill-random --numerics reference"
for i in $(seq 1 "${HEAD_RUNS:-2}"); do
  for c in "1 0" "1 4096" "8 0" "16 0" "64 0" "16 131072"; do
    set -- $c
    cx=
    [ "$2" -gt 0 ] && cx="--context $2"
    # shellcheck disable=SC2086
    timeout 60 $B/bench_cpu $BC --prompt 16 --decode 32 --batch "$1" $cx > "$OUT/d$1-c$2-$i.txt" 2>&1
    echo "d$1-c$2-$i: $(grep -m1 '^model ' "$OUT/d$1-c$2-$i.txt" | sed 's/.*decode //; s/ (graphs.*//')" | tee -a "$OUT/summary.txt"
  done
done
for i in $(seq 1 "${HEAD_RUNS:-2}"); do
  for g in ours lt; do
    f=pf-$i
    [ $g = lt ] && f=pf-lt-$i
    # shellcheck disable=SC2086
    timeout 60 $B/bench_cpu $BC --prompt 4096 --decode 2 --warm-prefill --prefill-gemm "$([ $g = lt ] && echo cublaslt || echo ours)" \
      > "$OUT/$f.txt" 2>&1
    echo "$f: $(grep -m1 '^model' "$OUT/$f.txt" | sed 's/.*prefill //; s/ (.*//; s/decode.*//')" | tee -a "$OUT/summary.txt"
  done
done
rm -rf "$T"
if [ "${HEAD_SERVE:-1}" = 1 ]; then
  TESTS=0 SANITIZE=0 KERNELS=0 FIXTURES=0 SERVE_FLASH=1 SERVE_LAYERS=8 SERVE_LONG="${HEAD_SERVE_LONG:-1}" \
    timeout 300 sh scripts/gpu_suite.sh > "$OUT/serve.txt" 2>&1
  echo "serve rc=$?"
  grep -A1 "conc" "$OUT/serve.txt" | grep -v "^--" | grep -v conc
fi
# the device tool returns at most 8 files from $OUT: past that, everything as $OUT/head.tgz (summary.txt beside it)
if [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
  (cd "$OUT" && tar czf head.tgz --exclude=head.tgz --exclude=summary.txt $(find . -maxdepth 1 -type f ! -name head.tgz ! -name summary.txt) &&
    find . -maxdepth 1 -type f ! -name head.tgz ! -name summary.txt -delete)
fi

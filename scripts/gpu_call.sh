#!/bin/sh
# Sourced by a device call's run.sh (bench/results/<session>/<call>/run.sh), from the repository root, for the
# frame every such record repeated: scripts/gpu_env.sh, a fresh results folder $R that the scripts write into
# ($OUT points there meanwhile), and at the end every file written there packed as the tool's $OUT/r.tgz.
#
#   cd "$(dirname "$0")/../../../.."
#   . scripts/gpu_call.sh
#   call_begin r7
#   sh scripts/gpu_verify.sh
#   call_trace new-b1 "--batch 1"
#   call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
#   call_end
set -u
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
call_begin() {
  R=/tmp/$1
  rm -rf "$R" && mkdir -p "$R"
  OUT_SAVE=$OUT
  export OUT="$R"
}
call_end() {
  OUT=$OUT_SAVE
  (cd "$R" && tar czf "$OUT/r.tgz" $(find . -type f))
}
# The steps the records since s38 repeated: call_trace TAG "ARGS" - a node trace (scripts/gpu_ktrace.sh) of a
# 64-step decode on 8 Flash-shaped layers (made once, /tmp/f8), reference numerics, overlapped steps, with more
# bench_cpu ARGS (the batch, a context): $R/kt-TAG.txt, its first lines printed. call_ab ROUNDS BINS CASE... -
# scripts/gpu_ab.sh's decode A/B of 64 steps (BINS: its AB_BINS), ROUNDS rounds alternating, its JSONs left out.
call_trace() {
  [ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
  sh scripts/gpu_ktrace.sh "$1" "$B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 64 --overlap $2"
}
call_ab() {
  n=$1 bins=$2
  shift 2
  AB_REPEAT=$n AB_DECODE=64 AB_BINS=$bins sh scripts/gpu_ab.sh "$@"
  rm -f "$R"/ab-*.json
}

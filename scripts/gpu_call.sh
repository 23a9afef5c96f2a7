#!/bin/sh
# Sourced by a device call's run.sh (bench/results/<session>/<call>/run.sh), from the repository root, for the
# frame every such record repeated: scripts/gpu_env.sh, a fresh results folder $R that the scripts write into
# ($OUT points there meanwhile), and at the end every file written there packed as the tool's $OUT/r.tgz.
#
#   cd "$(dirname "$0")/../../../.."
#   . scripts/gpu_call.sh
#   call_begin r7
#   call_verify DSV4_ATTN_QKW=1
#   call_trace new-b1 "--batch 1"
#   call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
#   call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
#   call_attn_ab new base
#   call_memcheck k_idx_score_tc "--attn-only --batch 4 --reps 1"
#   call_checks k_attn_one "--attn-only --batch 1,3 --reps 1"
#   call_ncu_metrics b16 k_attn "--attn-only --batch 16 --reps 4"
#   call_ncu gu-b16 'k_moe16<.int.4, .int.1, .bool.0, .int.1, .int.1, .int.8>' "--experts-only --batch 16 --reps 8"
#   call_prefill 2 "new=$B/bench_cpu;base=$B/bench_cpu.base" "--prefill-gemm cublaslt"
#   call_ops "cluster collapse"
#   call_bits
#   call_end
set -u
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
# call_begin NAME also keeps the GPU's name and clocks in $R/machine.txt and prints them (the records since s64 each
# wrote them out; a run.sh written before this still does, to the same file).
call_begin() {
  R=/tmp/$1
  rm -rf "$R" && mkdir -p "$R"
  OUT_SAVE=$OUT
  export OUT="$R"
  call_check_pack | tee "$R/pack.txt"
  nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
  cat "$R/machine.txt"
}
# call_check_pack - what the bundle is, printed first (and kept as $R/pack.txt): its commit.txt, and a loud line where
# it was packed from a tree with uncommitted changes (s62's review found a stale bundle of another tree in .gpu) or
# where a base build rides along that is this build itself (a BASE=build-gpu packed from the branch's checkout:
# gpu_pack.sh rebuilds build-gpu before it copies the base) - an A/B of a build against itself reads as even.
call_check_pack() {
  echo "bundle: $(head -1 $B/commit.txt 2>/dev/null || echo '(no commit.txt)')"
  grep -q uncommitted $B/commit.txt 2>/dev/null && echo "WARNING: the bundle was packed from a tree with uncommitted changes"
  for b in dsv4 bench_cpu bench_kernels; do
    if [ -f $B/$b.base ] && cmp -s $B/$b $B/$b.base; then echo "WARNING: $B/$b.base is the same file as $B/$b"; fi
  done
  return 0
}
call_end() {
  OUT=$OUT_SAVE
  call_snap
}
# call_snap - what the call has written so far packed as the tool's r.tgz now (call_end packs it again): a call cut
# by its time limit still brings back what ran (the records since s59 defined it inline as snap).
call_snap() {
  (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f))
}
# call_aftrace [TAG [NAME=VALUE...]] - k_attn_one's phases at one token from an AF_TRACE build carried as
# .gpu/bk-trace.xz (xz -9 of its bench_kernels; attn.cu's -DAF_TRACE): bench_kernels --attn-only --batch 1 --reps 8,
# with those variables set, into $R/TAG.txt.gz (TAG: trace unless given), bench/af_trace.py's table into
# $R/TAG.tab, its head printed.
call_aftrace() {
  tag=${1:-trace}
  [ $# -gt 0 ] && shift
  [ -x $B/bench_kernels.trace ] || { xz -dc .gpu/bk-trace.xz > $B/bench_kernels.trace && chmod +x $B/bench_kernels.trace; }
  timeout 120 env "$@" $B/bench_kernels.trace --attn-only --batch 1 --reps 8 > "$R/$tag.txt" 2>&1
  echo "== $tag exit $?"
  python3 bench/af_trace.py "$R/$tag.txt" > "$R/$tag.tab" 2>&1
  head -20 "$R/$tag.tab"
  gzip -9 -n "$R/$tag.txt"
}
# call_verify [NAME=VALUE...] - scripts/gpu_verify.sh (the suite, its memchecks, the logits against the base's dsv4)
# with those variables set and VERIFY_TIMEOUT 400 unless given, then call_snap and a pause for the GPU to settle
# before timings (what a kernel change's call runs first).
call_verify() {
  env VERIFY_TIMEOUT="${VERIFY_TIMEOUT:-400}" "$@" sh scripts/gpu_verify.sh
  call_snap
  sleep 5
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
# call_kernels PREFIX ROUNDS BINS ARGS - bench_kernels-like programs alternating, ROUNDS rounds: BINS as
# "NAME=COMMAND;NAME=COMMAND" (e.g. "new=$B/bench_kernels;base=$B/bench_kernels.base"), each run with ARGS into
# $R/PREFIX-NAME-ROUND.txt (s39-s41's indexer tables: call_kernels attn 2 "..." "--attn-only --batch 1,16,64").
call_kernels() {
  pre=$1 n=$2 bins=$3 args=$4
  i=1
  while [ $i -le "$n" ]; do
    rest=$bins
    while [ -n "$rest" ]; do
      one=${rest%%;*}
      case $rest in *";"*) rest=${rest#*;} ;; *) rest= ;; esac
      timeout 150 ${one#*=} $args > "$R/$pre-${one%%=*}-$i.txt" 2>&1
    done
    i=$((i + 1))
  done
}
# call_attn_ab [VARIANT...] - call_kernels attn ...'s tables side by side (bench/attn_ab.py: each variant's µs by round,
# the first against the last in %), printed and kept as $R/attn-ab.txt (s59 pp3/-pp4/ and s60 mrg/ wrote it inline).
call_attn_ab() {
  python3 bench/attn_ab.py "$R" "$@" > "$R/attn-ab.txt" 2>&1
  cat "$R/attn-ab.txt"
}
# call_tune_file FILE ROWS - a `dsv4 tune` file for this device (its name as the backend prints it) with the
# attention rows ROWS (JSON objects, comma-separated: {"max_tokens": 3, "score_rows": 16, "sum": "one"}, ...), for
# DSV4_TUNE=FILE in an A/B of kernel choices (s67's one34/, one3/, m1/ and pv16/ wrote theirs inline).
call_tune_file() {
  printf '{"dsv4_tune": 1, "device": "%s (sm_90)", "attention": [%s]}\n' \
    "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" "$2" > "$1"
}
# call_checks KERNEL ARGS - what a kernel change's timing call checks first (s68's pipe/, bulk/ and bulk2/ wrote it out
# each): call_ops on the attention's cases, call_bits (the logits against the bundle's base build) and call_memcheck
# KERNEL ARGS (the GPU's name and clocks are call_begin's).
call_checks() {
  call_ops "attn|one"
  call_bits
  call_memcheck "$1" "$2"
  call_snap
}
# call_memcheck KERNEL ARGS - compute-sanitizer's memcheck on KERNEL's launches in $B/bench_kernels ARGS (e.g.
# k_idx_score_tc "--attn-only --batch 4 --reps 1") into $R/san-KERNEL.txt, printing its exit and summary.
call_memcheck() {
  timeout 150 compute-sanitizer --tool memcheck --kernel-name "kns=$1" --error-exitcode 3 $B/bench_kernels $2 \
    > "$R/san-$1.txt" 2>&1
  echo "== memcheck $1 exit $?"
  grep -E "ERROR SUMMARY" "$R/san-$1.txt" | tail -1
}
# call_prefill ROUNDS BINS [ARGS] - the warm 4,096-token prefill the records since s42 time (8 Flash-shaped layers
# made once at /tmp/f8, reference numerics): BINS as call_kernels' ("new=$B/bench_cpu;base=env X=0
# $B/bench_cpu.base"), each with --warm-prefill and ARGS (e.g. --prefill-gemm cublaslt), ROUNDS rounds alternating,
# into $R/pf-NAME-ROUND.txt (summary_lib.prefills reads them), one line each printed.
call_prefill() {
  n=$1 bins=$2 args=${3:-}
  [ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
  i=1
  while [ $i -le "$n" ]; do
    rest=$bins
    while [ -n "$rest" ]; do
      one=${rest%%;*}
      case $rest in *";"*) rest=${rest#*;} ;; *) rest= ;; esac
      # shellcheck disable=SC2086
      timeout 150 ${one#*=} -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
        --warm-prefill $args > "$R/pf-${one%%=*}-$i.txt" 2>&1
      echo "prefill 4096 ${one%%=*} ($i): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-${one%%=*}-$i.txt")"
    done
    i=$((i + 1))
  done
}
# call_ncu TAG KERNEL ARGS [TOP] - ncu's warp states by SASS line for one launch of KERNEL (a regex on ncu's
# demangled names, which spell template arguments "(int)4": 'k_moe16<.int.4, .int.1, .bool.0, .int.1, .int.1,
# .int.8>') in $B/bench_kernels ARGS (e.g. "--experts-only --batch 16 --reps 8", the fifth launch profiled):
# $R/det-TAG.txt (the details page), $R/src-TAG.csv.gz (the source page by SASS line), $R/stalls-TAG.txt
# (bench/ncu_stalls.py's regions and its TOP instructions, default 16), $R/prof-TAG.log; the details' key lines
# and the stalls' head printed. ncu locks the clocks (~1.35 GHz on the H200): compare its durations with each
# other, not with bench_kernels'.
call_ncu() {
  tag=$1 kern=$2 args=$3 top=${4:-16}
  # shellcheck disable=SC2086 # ARGS are words
  timeout 200 ncu --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats \
    --section Occupancy --kernel-name-base demangled -k "regex:$kern" --launch-skip 4 --launch-count 1 \
    -o "$R/$tag" $B/bench_kernels $args > "$R/prof-$tag.log" 2>&1
  echo "== ncu $tag exit $?"
  if [ -f "$R/$tag.ncu-rep" ]; then
    ncu -i "$R/$tag.ncu-rep" --page details > "$R/det-$tag.txt" 2>&1
    ncu -i "$R/$tag.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip > "$R/src-$tag.csv.gz"
    rm -f "$R/$tag.ncu-rep"
    grep -E "Duration|Warp Cycles Per Issued|Issued Warp|Eligible Warps|Registers Per|Achieved Occupancy|DRAM Throughput|Waves Per SM" \
      "$R/det-$tag.txt" | head -12
    python3 bench/ncu_stalls.py "$R/src-$tag.csv.gz" "$top" > "$R/stalls-$tag.txt" 2>&1
    head -40 "$R/stalls-$tag.txt"
  else
    echo "no report (no launch matched?): $(tail -2 "$R/prof-$tag.log")"
  fi
}
# call_ncu_metrics TAG KERNELS ARGS - ncu at the GPU's own clocks and without its cache flush (each kernel reads what
# the one before wrote) on 8 launches of the kernels matching KERNELS (a regex on demangled names, e.g. k_attn)
# in $B/bench_kernels ARGS after 8 skipped: time, instructions, issue, DRAM bytes read, warps a cycle, clocks
# (s59 ncu16/'s set) into $R/ncu-TAG.txt, printing each launch's kernel and duration.
call_ncu_metrics() {
  tag=$1 kern=$2 args=$3
  m=gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,sm__warps_active.avg.per_cycle_active,smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second
  # shellcheck disable=SC2086 # ARGS are words
  timeout 150 ncu --clock-control none --cache-control none --metrics "$m" --kernel-name-base demangled \
    -k "regex:$kern" --launch-skip 8 --launch-count 8 $B/bench_kernels $args > "$R/ncu-$tag.txt" 2>&1
  echo "== ncu metrics $tag exit $?"
  grep -E "^  [a-z_ ]*k_|duration" "$R/ncu-$tag.txt" | sed 's/(.*//' | paste - - | awk '{print $1, $2, $NF}' | head -10
}
# call_ops PATTERN - test_ops_cuda alone (the bundle's; with the env it inherits) into $R/ops_cuda.txt.gz, printing
# its exit, the case lines matching PATTERN (an ERE: the cases a change added) and cmocka's verdict.
call_ops() {
  timeout 200 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1
  echo "test_ops_cuda exit $?"
  grep -E "$1|\[  (PASSED|FAILED)" "$R/ops_cuda.txt" | head -20
  gzip -9 -n "$R/ops_cuda.txt"
}
# call_bits - scripts/gpu_bits.sh (the logits against the bundle's dsv4.base byte for byte, and repeated) into
# $R/bits.txt (its output in $R/bits-run.txt), printing its exit and its lines.
call_bits() {
  timeout 200 sh scripts/gpu_bits.sh > "$R/bits-run.txt" 2>&1
  echo "gpu_bits exit $?"
  cat "$R/bits.txt"
}

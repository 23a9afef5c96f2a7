#!/bin/sh
# s43 call 5: CUPTI's kernel timeline (bench/ktrace.c) of a warm 4,096-token prefill on 8 Flash layers, ours and
# --prefill-gemm cublaslt (kt-*.csv.gz: every kernel of the warm-up prefill, the timed one and 2 decode steps;
# bench/results/2026-12-02-s43/pftrace/kernels.py tables the timed prefill's kernels by name). Pack:
# KTRACE=1 LEAN=1 NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pftrace
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for g in ours cublaslt; do
  KT_MODE=graph sh scripts/gpu_ktrace.sh pf-$g "$B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference \
--fill-random --prompt 4096 --decode 2 --warm-prefill --prefill-gemm $g"
  grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/kt-pf-$g.log"
done
call_end

#!/bin/sh
# s43 call 4: the 4,096-token prefill on 8 Flash layers after an untimed one in the same process (bench_cpu
# --warm-prefill: call 3's cuBLASLt runs carried the library's first-use costs, 170-192 ms against 158 before
# wo_a took it): ours, cuBLASLt, and cuBLASLt without wo_a (DSV4_LT_WOA=0), alternating (2 rounds), then where
# each goes (--profile). Pack: NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin warm
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
run() { # TAG GEMM [ENV...] [ARGS]
  tag=$1 g=$2; shift 2
  env "$@" timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 \
    --decode 2 --prefill-gemm $g --warm-prefill ${ARGS:-} > "$R/$tag.txt" 2>&1
  echo "$tag: $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/$tag.txt")"
}
for r in 1 2; do
  run pf-ours-$r ours DSV4_LT_WOA=1
  run pf-lt-$r cublaslt DSV4_LT_WOA=1
  run pf-ltnowoa-$r cublaslt DSV4_LT_WOA=0
done
for g in ours cublaslt; do
  ARGS="--profile $R/prof-$g.json" run prof-$g $g DSV4_LT_WOA=1
  sed -n '/^prefill:/,$p' "$R/prof-$g.txt"
done
call_end

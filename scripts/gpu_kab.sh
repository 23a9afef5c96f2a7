#!/bin/sh
# On the GPU machine (after scripts/gpu_pack.sh): a kernel change's bits and its kernels alone, variants
# alternating - the loop s33-s34's attention calls each wrote out. First test_ops_cuda under each variant's
# environment (KAB_OPS="NAME=ENV ...;NAME=ENV ...", default: the new build as it is; its lines that say whether
# it passed are printed), then `bench_kernels KAB_ARGS` (default --attn-only --batch 1,2) for each variant of
# KAB_BINS in order, KAB_REPEAT rounds (default 3): "NAME=COMMAND;NAME=COMMAND;..." as gpu_ab.sh's AB_BINS
# (default new=.gpu/bench_kernels;base=.gpu/bench_kernels.base). Files into $OUT: ops_cuda-NAME.txt.gz,
# attn-NAME-I.txt (bench/results/summary_lib.attn reads them); each round's attention rows printed on one line.
#   KAB_BINS="new=.gpu/bench_kernels;x=env DSV4_X=1 .gpu/bench_kernels;base=.gpu/bench_kernels.base" \
#     KAB_OPS="new=;x=DSV4_X=1" sh scripts/gpu_kab.sh
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
ops=${KAB_OPS-new=}
bins=${KAB_BINS:-new=$B/bench_kernels;base=$B/bench_kernels.base}
rounds=$(seq 1 "${KAB_REPEAT:-3}" | tr '\n' ' ')
IFS=';'
for o in $ops; do
  IFS=' '
  on=${o%%=*} oe=${o#*=}
  # shellcheck disable=SC2086
  env $oe timeout "${KAB_OPS_TIMEOUT:-200}" $B/test_ops_cuda > "$OUT/ops_cuda-$on.txt" 2>&1
  echo "exit $?" >> "$OUT/ops_cuda-$on.txt"
  echo "== test_ops_cuda $on${oe:+ ($oe)}"
  grep -E "FAIL|differ|other bits|PASSED|exit" "$OUT/ops_cuda-$on.txt" | head -12
  gzip -9 -n -f "$OUT/ops_cuda-$on.txt"
done
IFS=' '
for i in $rounds; do
  IFS=';'
  for v in $bins; do
    IFS=' '
    vn=${v%%=*} cmd=${v#*=}
    # shellcheck disable=SC2086
    timeout "${KAB_TIMEOUT:-100}" $cmd ${KAB_ARGS:---attn-only --batch 1,2} > "$OUT/attn-$vn-$i.txt" 2>&1
    echo "== $vn $i"
    grep -E "^(CSA|HCA)" "$OUT/attn-$vn-$i.txt" | awk '{print $1,$2,$3,$4,$5,$6,$7}' | tr '\n' ';'
    echo
  done
done

#!/bin/sh
# s67 ax/ (one H100 or H200; main at the bundle's commit): the oracle audit's new random tiny models on the GPU. The
# audit (a session helper, /tmp/oracle_audit on the session's machine: ~170 configurations built as
# tools/make_fixtures.py builds tiny_c, every tensor randomised, compared on the CPU with transformers in both
# numerics) found no forward-pass difference; here 16 of them, carried as .gpu/fx.tar.xz (config, weights, ids),
# (csa3_hca7 left out after the first try: its ratios 3 and 7 give pages of 5,376 tokens, past what the test's
# workloads and pool cover - the harness's own checks, the same on the CPU alone) run through test_gpu_vs_cpu (its three workloads, greedy decode, plain and reference numerics, the CUDA engine
# against the CPU's) in two halves (the test holds 96 cases): 3 / 20 / 24 heads, 8 hyper-connection streams, CSA
# ratios 1 / 2 / 3 beside HCA 5 / 7, an indexer head of 8 dimensions, adjacent HCA and CSA layers, a 700-token
# model, a window of 1, top-1 indexer, HCA only, a hidden size of 33, a random draw, top-1 experts.
# Pack: AS=ax NOTOK=1 sh scripts/gpu_pack.sh, and the models as .gpu/fx.tar.xz
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ax
X=/tmp/ax
rm -rf $X && mkdir -p $X/fx
xz -dc .gpu/fx.tar.xz | tar xf - -C $X/fx
for half in "heads3 heads20 heads24 hc8 csa1 csa2_hca5 idx_hd8_eqrope" \
            "hca_csa_adj long700 win1 topk1 only_hca hidden33 rand00 exp_top1"; do
  h=$(echo $half | cut -d' ' -f1)
  rm -rf $X/s && mkdir -p $X/s/tests/fixtures
  for m in $half; do ln -s $X/fx/$m $X/s/tests/fixtures/$m; done
  timeout 240 env DSV4_SRC=$X/s $B/test_gpu_vs_cpu > "$R/gvc-$h.txt" 2>&1
  echo "== gpu_vs_cpu ($half) exit $?"
  grep -E "^gpu-vs-cpu|FAILED|PASSED|ERROR|error" "$R/gvc-$h.txt" > "$R/gvc-$h.sum"
  cat "$R/gvc-$h.sum"
  gzip -9 -n "$R/gvc-$h.txt"
  call_snap
done
call_end

#!/bin/sh
# Prepared in s48, NOT GPU-run: div64.diff (git apply it on main at 4a30af4 or later) - the index-to-row paths in
# 32-bit integer arithmetic where the values fit (dsv4_div_nn / dsv4_rem_nn, engine/state.h: every context position
# does): cmp_row and dsv4_idx_key_fp4 (a compressed row's page and row: three 64-bit divisions a row, each a call of
# ~70 instructions on the GPU - the attention's compressed rows, the indexer scores' keys every tile), row_ptr's
# window slot, attn_rows' HCA count, the top-k's and the scores kernel's N. The same integers (make test passes with
# it on the CPU, whose FP4-key path shares dsv4_idx_key_fp4). Measures: the whole suite (the logits against the
# build before, byte for byte), the attention and indexer alone new / base (k_attn_one's CSA at 1 token and 4k,
# the #8 target of < 10 us, stood at 11.2; the scores at 1M), decode at 1 x 4k, 1 x 128k, 16 x 128k, 1 x ~1M.
# Pack: BASE=<build-gpu of the commit it applies on> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin div64
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16"
grep -E "CSA|HCA|top-512 of (32768|262144)" "$R/attn-new-1.txt" | head -12
grep -E "CSA|HCA|top-512 of (32768|262144)" "$R/attn-base-1.txt" | head -12
snap
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1c128k:--batch 1 --context 131072" \
  "b16c128k:--batch 16 --context 131072" "b1c1m:--batch 1 --context 1040000"
snap
VERIFY_TIMEOUT=400 sh scripts/gpu_verify.sh | tail -14
call_end

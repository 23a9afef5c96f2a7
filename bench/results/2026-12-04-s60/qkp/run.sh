#!/bin/sh
# OUTCOME: the suite passed, the logits byte for byte, every memcheck clean - but slower, and not landed (its
# diff: qkp.diff). The qkp0 column is qkp too (cuda_env_int returns the default for 0), so the comparison is new
# against main's build before s60 (base) and mrg/'s ej0 (md16g, another machine): CSA 16 tokens 36.2 against
# 31.9, HCA 4k 64 tokens 45.9 against 32.1 (mrg/). The part's 8 heads a warp one after another in each block's
# epilogue take longer than k_attn_md16's warp per (token, head) across the GPU, and HCA's small parts load q
# (64 KB) for each 20-row part.
# s60 qkp/: the scores' blocks make the part weights (k_attn_qk<NT, true, true>: a block per (token, part), the part's
# scores into shared memory, its heads' maxima, sums and BF16 weights in k_attn_one's order, a warp a head), then
# k_attn_join the denominators and factors - in place of the scores through memory and k_attn_md16. Where the
# tuned choice takes 64-row score blocks (from 9 tokens), with BF16 rows and parts of up to 96 rows (CSA; HCA to
# a ~66k context). Claimed: the same bits. First the whole suite with main's build as the base (the logits byte
# for byte), then attention alone at 16 / 64 tokens: new, DSV4_ATTN_QKP=0 (the same binary, the old chain),
# main's build.
# Pack: BASE=/tmp/baseP KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh   (/tmp/baseP: main's build-gpu, 88a7072's kernels)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin qkp
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); } # what has run comes back if the call is cut
VERIFY_TIMEOUT=430 sh scripts/gpu_verify.sh
snap
sleep 5
call_kernels attn 1 "new=$B/bench_kernels;qkp0=env DSV4_ATTN_QKP=0 $B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 16,64"
for f in "$R"/attn-*.txt; do echo "$f $(grep -E '^(CSA|HCA)' "$f" | awk '{printf "%s ", $7}')"; done
call_end

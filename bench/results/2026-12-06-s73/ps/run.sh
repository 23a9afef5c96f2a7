#!/bin/sh
# s73 ps/ (after rx/: the parts' cluster barrier without its release - MEMBAR.ALL.GPU in SASS - took CSA 1 x 4k from
# 10.31-10.46 to 9.76-9.80 us, timing only): k_attn_one with the parts' maxima, sums and weighted sums sent to their
# heads' owners by st.async onto an mbarrier a block (no release needed; the owners combine from their own shared
# memory), the default where it fits (with the paired tiles); DSV4_ATTN_ONE_ASYNC=0 the barrier as before. *.base: the
# build before (a0984e27's tree, the same source as 241d6aea). The same values by construction.
# - the attention alone at 1-3 tokens, 4k and 128k, each also with 16 heads a block (DSV4_ATTN_ONE8_ROWS=1);
# - test_ops_cuda (every attention layout against the CPU, the tuned choices bit for bit), the logits against the
#   base build byte for byte, memcheck on k_attn_one - and the first two again with 16 heads a block;
# - decode at batch 1 (4k, 128k) and 2 (4k): push against the barrier, and push with 16 heads a block.
# Pack: AS=ps BASE=/tmp/base-s73 NOTOK=1 sh scripts/gpu_pack.sh (base: a0984e27's bench_cpu, bench_kernels, dsv4)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ps
A0="env DSV4_ATTN_ONE_ASYNC=0" H16="env DSV4_ATTN_ONE8_ROWS=1" A016="env DSV4_ATTN_ONE_ASYNC=0 DSV4_ATTN_ONE8_ROWS=1"
call_kernels attn 2 "push=$B/bench_kernels;bar=$A0 $B/bench_kernels;push16=$H16 $B/bench_kernels;bar16=$A016 $B/bench_kernels;base=$B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab push bar push16 bar16 base
call_snap
call_ops "attn|one"
call_bits
call_memcheck k_attn_one "--attn-only --batch 1,2,3 --contexts 4096,131072 --reps 1"
call_snap
export DSV4_ATTN_ONE8_ROWS=1
echo "== DSV4_ATTN_ONE8_ROWS=1"
call_ops "attn|one"
mv "$R/ops_cuda.txt.gz" "$R/ops_cuda-h16.txt.gz"
call_bits
mv "$R/bits.txt" "$R/bits-h16.txt"
mv "$R/bits-run.txt" "$R/bits-run-h16.txt"
call_memcheck k_attn_one "--attn-only --batch 1,3 --contexts 4096,131072 --reps 1"
mv "$R/san-k_attn_one.txt" "$R/san-k_attn_one-h16.txt"
unset DSV4_ATTN_ONE8_ROWS
call_snap
call_ab 2 "push=$B/bench_cpu --overlap;bar=$A0 $B/bench_cpu --overlap;push16=$H16 $B/bench_cpu --overlap" \
  "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072" "b2x4k:--batch 2 --context 4096"
sort "$R/ab.txt" | uniq
call_end

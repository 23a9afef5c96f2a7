#!/bin/sh
# s61 qkw/ (PREPARED, NOT run: the device was not lent again after icache/): run it on branch wip/qkw-rows (on main at
# the s61 records). k_attn_qkw, the scores at 9+ tokens on wgmma behind DSV4_ATTN_QKW=1: S^T = K q^T with the 64 rows of
# a block as M (A from registers: each lane's 16 bytes of a row, as k_attn_qk loads them) and the 64 heads as N (q in
# shared memory, its 4-byte words transposed per 32 dimensions so that each slot holds k_attn_qk's pairing). next/'s ncu
# had k_attn_qk<4, true> at 13.6-14.6 / 33-34 us of the chain at 16 / 64 tokens (3.2 / 12.8 M instructions, ~2,500 a
# warp, 35-44 % issue); the wgmma form issues ~7x fewer instructions a score. Claimed: the same bits (every step adds
# the same products in the same slots). First the bits: the whole suite with it on (test_ops_cuda's tuned choices put
# score_rows 64 - now k_attn_qkw - beside 16's k_attn_qk<1> bit for bit, on the flash (512 x 64) and heads128 (128 x 20)
# scenarios; the logits against main's dsv4 byte for byte) and a memcheck of it; then the chain alone at 16 / 64 tokens
# with and without it, ncu's metrics for it, decode at 16 / 64.
# Pack (on the branch): BASE=<a build-gpu of main, copied aside first> NOTOK=1 sh scripts/gpu_pack.sh  (move older records aside:
# the tree that travels is limited to 64 MiB)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin qkw
call_verify DSV4_ATTN_QKW=1
export DSV4_ATTN_QKW=1 # (an assignment before a shell function's name does not reach its commands everywhere)
call_memcheck k_attn_qkw "--attn-only --batch 16 --reps 1"
for b in 16 64; do call_ncu_metrics b$b 'k_attn_q' "--attn-only --batch $b --reps 4"; done
unset DSV4_ATTN_QKW
call_kernels attn 2 "qkw=env DSV4_ATTN_QKW=1 $B/bench_kernels;mma=$B/bench_kernels" "--attn-only --batch 16,64"
call_attn_ab qkw mma
call_snap
call_ab 2 "qkw=env DSV4_ATTN_QKW=1 $B/bench_cpu --overlap;mma=$B/bench_cpu --overlap" "b16:--batch 16" "b64:--batch 64"
call_end

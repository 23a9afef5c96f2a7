#!/bin/sh
# s73 rx/ (after tr/: CSA 1 x 4k after the PDL wait ~15,900 cycles, of which the sums' cluster barrier ~1,800 and the
# combine's remote reads ~1,780 in parts 2-7; cl.sync() there compiles to MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR +
# UCGABAR_ARV / _WAIT + CCTL.IVALL: a release at cluster scope is a GPU-scope membar in SASS).
# - What the membar costs: *.base (and bk-trace-half.xz, with -DAF_TRACE) are builds of the bundle's tree with
#   rx/relax.diff under -DAF_PROBE_HALF: that barrier relaxed (no release: the parts' stores are not ordered before
#   it, so its values are not guaranteed - timing only). If it pays, the exchange can go through st.async onto an
#   mbarrier a block (no release needed) and keep its values.
# - hb/'s 16-heads-a-block column was void: DSV4_ATTN_ONE8_ROWS=0 reads as unset (cuda_env_int), so it ran the
#   default. DSV4_ATTN_ONE8_ROWS=1 takes 16 heads a block (HB 16) wherever a part has more than one row.
# Pack: LEAN=1 sh scripts/gpu_pack.sh (no AS: .gpu/bundle.tar.xz) with BASE=the relaxed build, then xz -9 the two
# AF_TRACE builds' bench_kernels into .gpu/bk-trace.xz (as it is) and .gpu/bk-trace-half.xz (relaxed).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rx
H16="env DSV4_ATTN_ONE8_ROWS=1"
call_kernels attn 2 "def=$B/bench_kernels;relax=$B/bench_kernels.base;hb16=$H16 $B/bench_kernels;relax16=$H16 $B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab relax hb16 relax16 def
call_snap
call_aftrace trace
xz -dc .gpu/bk-trace-half.xz > $B/bench_kernels.trace && chmod +x $B/bench_kernels.trace
call_aftrace relax
call_aftrace relax16 DSV4_ATTN_ONE8_ROWS=1
call_end

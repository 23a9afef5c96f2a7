#!/bin/sh
# s73 tr/ (after hb/: half of each cached row copied made CSA 1 x 4k no faster, 10.45-10.51 against 10.33-10.36 us,
# and HCA 128k 3.5 % faster): k_attn_one's phases at one token (bench/af_trace.py) from two -DAF_TRACE builds of the
# bundle's tree, carried xz'd in .gpu: bk-trace.xz (the kernel as it is) and bk-trace-half.xz (with -DAF_PROBE_HALF,
# hb/probe.diff: half of each cached row copied, timing only), each with one8 (the default) and with 16 heads a block
# (DSV4_ATTN_ONE8_ROWS=0). s60's trace (8 warps then): parts 2-7 after the wait ~2,200 cycles idx/addr, ~4,700
# issuing the rows' copies, ~2,850 scores, ~2,100 weights, ~1,330 weighted sum, ~1,300 barrier, ~2,150 join+combine.
# Pack: AS=tr LEAN=1 sh scripts/gpu_pack.sh, then xz -9 the two builds' bench_kernels into .gpu (see the README).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin tr
call_aftrace trace
call_aftrace trace16 DSV4_ATTN_ONE8_ROWS=0
xz -dc .gpu/bk-trace-half.xz > $B/bench_kernels.trace && chmod +x $B/bench_kernels.trace
call_aftrace half
call_aftrace half16 DSV4_ATTN_ONE8_ROWS=0
call_end

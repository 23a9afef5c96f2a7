#!/bin/sh
# s61 mrg3/ (PREPARED in s62, NOT run: after mrg/ passed; split from mrg2/run.sh for the 600 s limit): decode with
# k_attn_qkw and the two-warpgroup k_attn_pvw (DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1) against main, 8 Flash layers,
# reference numerics, batch 1 / 1 x 4k / 16 / 32 / 64, 2 rounds alternating. Pack: as mrg/run.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mrg3
call_ab 2 "all=env DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1 $B/bench_cpu --overlap;main=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b1x4k:--batch 1 --context 4096" "b16:--batch 16" "b32:--batch 32"
call_snap
call_ab 2 "all=env DSV4_ATTN_QKW=1 DSV4_ATTN_PVW2=1 $B/bench_cpu --overlap;main=$B/bench_cpu.base --overlap" \
  "b64:--batch 64"
call_end

#!/bin/sh
# s61 ow2/ (PREPARED in s62, NOT run: after ow/ passed): decode with k_attn_ow (DSV4_ATTN_OW=1) against main, 8 Flash
# layers, reference numerics, batch 8 / 16 / 32, 2 rounds alternating (split from ow/run.sh for the 600 s limit).
# Pack: as ow/run.sh (branch wip/one-wg, BASE=<main's build-gpu copied aside>).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ow2
call_ab 2 "ow=env DSV4_ATTN_OW=1 $B/bench_cpu --overlap;main=$B/bench_cpu.base --overlap" "b8:--batch 8" \
  "b16:--batch 16" "b32:--batch 32"
call_end

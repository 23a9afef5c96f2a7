#!/bin/sh
# s74 kt/ (after lpa/: every K-split linear's parts' sums by st.async): node traces of 64-step decodes on 8
# Flash-shaped layers (reference numerics, overlapped steps, 16-token context): batch 1 with the push and with
# DSV4_LIN_ASYNC=0 (the cluster barrier), and batch 16 - where a layer's time goes now (s57-s58's were the last
# batch-1 traces; s59-s74 changed the attention at one token, the experts' words and the linears' sums).
# Pack: AS=kt KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh kt=bench/results/2026-12-06-s74/kt/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin kt
call_trace b1 "--batch 1"
call_trace b16 "--batch 16"
export DSV4_LIN_ASYNC=0
call_trace a0-b1 "--batch 1"
call_end

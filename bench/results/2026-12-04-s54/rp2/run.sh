#!/bin/sh
# s54 rp2/: s53's router-chain diff (bench/results/2026-12-04-s53/rp/route-plan.diff, applied with --3way on
# 52f2ee9's tree: k_route's bias before its wait, its rounds by redux.sync, at up to 4 tokens the experts' plan
# written by k_route, the gate's k_mma_bf16 triggering) again, now that the shared expert's k_wg8 rings leave
# room for k_moe16's blocks: s53 measured it even and read the FFN's two weight streams sharing the SMs. The
# same binary: new (all on), old (DSV4_ROUTE_PLAN=0 DSV4_ROUTE_RX=0 DSV4_MMA_TRIG=0), each with the side budget
# 32 (the tree's) and 200 (DSV4_WG8_SIDE_KB=200: before 52f2ee9); three rounds alternating; node traces at
# batch 1 of new and old.
# Pack: in a worktree of 52f2ee9 with the diff applied, NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh; its .gpu here.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin rp2
OLD="DSV4_ROUTE_PLAN=0 DSV4_ROUTE_RX=0 DSV4_MMA_TRIG=0"
call_ab 3 "new=$B/bench_cpu --overlap;old=env $OLD $B/bench_cpu --overlap;new200=env DSV4_WG8_SIDE_KB=200 $B/bench_cpu --overlap;old200=env $OLD DSV4_WG8_SIDE_KB=200 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b16:--batch 16"
call_trace new-b1 "--batch 1"
(export DSV4_ROUTE_PLAN=0 DSV4_ROUTE_RX=0 DSV4_MMA_TRIG=0; call_trace old-b1 "--batch 1")
call_end

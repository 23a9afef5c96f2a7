#!/bin/sh
# (measured, NOT kept: see ../README.md; mixsplit.diff) One token's hc_pre collapse in k_hc_mix's last block (DSV4_HC_MIXSPLIT, default on at n = 1): the suite (memchecks,
# logits against the base byte for byte), decode at batch 1 new / DSV4_HC_MIXSPLIT=0 / base (main before it,
# e42312a) / base0 (2b5a380, the session's start) 3 rounds, batch 2 / 16 new / base0 2 rounds, then the head once.
# BASE=/tmp/base1 sh scripts/gpu_pack.sh; .gpu-base0/bench_cpu.xz = 2b5a380's; carry .gpu and .gpu-base0.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mixsplit
[ -x .gpu-base0/bench_cpu ] || xz -dk .gpu-base0/bench_cpu.xz
timeout 120 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "test_ops_cuda rc=$?"; grep -E "PASSED|FAILED|differs" $R/ops.txt | head -8
sh scripts/gpu_verify.sh
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;off=env DSV4_HC_MIXSPLIT=0 $B/bench_cpu;base=$B/bench_cpu.base;base0=.gpu-base0/bench_cpu" \
  timeout 300 sh scripts/gpu_ab.sh "b1:--batch 1"
AB_REPEAT=2 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;base0=.gpu-base0/bench_cpu" timeout 150 sh scripts/gpu_ab.sh "b2:--batch 2" "b16:--batch 16"
cat $R/ab.txt
HEAD_RUNS=1 HEAD_SERVE=0 timeout 150 sh scripts/gpu_head.sh
call_end

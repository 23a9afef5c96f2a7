#!/bin/sh
# (prepared in s28, NOT run: no device time left; run it first next session after BASE=<a build-gpu of main>
# sh scripts/gpu_pack.sh on wip/moe-mpack) The routed experts' M packed in gate / up's epilogue (moe_mpack: the
# last block of a tile's 128-row group packs it; DSV4_MOE_MPACK=0|1) instead of a k_moe_pack16 launch between
# gate / up and down: one launch less a layer on every decode step's chain. scripts/gpu_verify.sh (the suite
# with memchecks; test_ops_cuda compares both settings bit for bit on every expert case; logits against
# main's), the experts alone with it on / off, decode at batch 1 / 8 / 16 / 64 on / off (3 rounds)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r1
sh scripts/gpu_verify.sh
for v in 1 0; do
  DSV4_MOE_MPACK=$v timeout 60 $B/bench_kernels --experts-only --batch 1,2,4,8,16,64 > $R/experts-m$v.txt 2>&1
  echo "== DSV4_MOE_MPACK=$v"; grep -E "^experts \(ref\.\)" $R/experts-m$v.txt
done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="m1=$B/bench_cpu;m0=env DSV4_MOE_MPACK=0 $B/bench_cpu" timeout 300 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
cat $R/ab.txt
call_end

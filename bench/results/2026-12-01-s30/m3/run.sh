#!/bin/sh
# (prepared in s29, run in s30: see README.md) The three prepared branches in one call: on a temporary merge
#   git checkout -b tmp/m3 main && git merge --no-edit wip/moe-flow wip/idx-q-early wip/hc-post-loads
# (they touch different kernels; s29 checked that the merge builds), after building main's build-gpu (dsv4
# bench_cpu bench_kernels) into /tmp/base and BASE=/tmp/base sh scripts/gpu_pack.sh. test_ops_cuda first under
# a timeout (moe16_flow's waits: a count that never arrives traps after 2 s), then scripts/gpu_verify.sh
# (memchecks, logits against main's byte for byte); the experts with DSV4_MOE_FLOW=0 / 1 and base; the indexer
# and attention alone new / base; k_hc_post alone under ncu new / base; decode at batch 1 / 2 / 16 against
# base and against DSV4_MOE_FLOW=0 (2 rounds). Land each branch on what its own figures say.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin m3
timeout 90 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "test_ops_cuda rc=$?"; grep -E "PASSED|FAILED|differs|moe knobs|moe sum" $R/ops.txt | head -8
sh scripts/gpu_verify.sh
for v in f0 f1 base; do
  c=$B/bench_kernels; e=; [ $v = base ] && c=$B/bench_kernels.base; [ $v = f0 ] && e=DSV4_MOE_FLOW=0
  env $e timeout 60 $c --experts-only --batch 1,2,4 > $R/experts-$v.txt 2>&1
  echo "== experts $v"; grep -E "^experts \(ref\.\)" $R/experts-$v.txt
done
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 120 $c --attn-only --batch 1 > $R/attn-$v.txt 2>&1
  echo "== indexer $v"; grep -A4 "^indexer, FP4" $R/attn-$v.txt
done
model=$(mktemp -d)/flash
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$model" > /dev/null 2>&1
for v in new base; do
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  timeout 120 ncu --clock-control none -k regex:^k_hc_post --metrics gpu__time_duration.sum $c -m "$model" --prompt 16 \
    --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/ncu-post-$v.txt 2>&1
  echo "k_hc_post $v: $(grep gpu__time_duration $R/ncu-post-$v.txt | awk '{print $NF}' | tail -16 | tr '\n' ' ')"
done
AB_REPEAT=2 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;f0=env DSV4_MOE_FLOW=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 300 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
cat $R/ab.txt
call_end

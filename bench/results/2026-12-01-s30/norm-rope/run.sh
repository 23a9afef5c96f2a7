#!/bin/sh
# (prepared in s30 on wip/norm-rope-smem, NOT run) k_norm_rope with its row in shared memory between the norm,
# RoPE and FP8SIM (one global write at the end instead of two L2 round trips for other threads' values): the suite
# (memchecks; logits against main byte for byte: the same operations on the same values), k_norm_rope alone
# under ncu new / base at batch 1 (8 Flash layers, 2 decode steps: 16 calls a step), decode at batch 1 / 16
# against base, 3 rounds. BASE=<a build-gpu of main> sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin norm-rope
sh scripts/gpu_verify.sh
model=$(mktemp -d)/flash
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$model" > /dev/null 2>&1
for v in new base; do
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  timeout 120 ncu --clock-control none -k regex:^k_norm_rope --metrics gpu__time_duration.sum $c -m "$model" \
    --prompt 16 --decode 2 --backend cuda --numerics reference --fill-random --batch 1 > $R/ncu-nr-$v.txt 2>&1
  echo "k_norm_rope $v: $(grep gpu__time_duration $R/ncu-nr-$v.txt | awk '{print $NF}' | tail -16 | tr '\n' ' ')"
done
AB_REPEAT=3 AB_DECODE=32 timeout 300 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
cat $R/ab.txt
call_end

#!/bin/sh
# s29 call 4: k_embed with its loads in flight together (k_embed_bf16) and the tuned attention table
# (dsv4 tune over decode's shapes: `one` up to 2 tokens, walk64 above 64) against e007a00 (.base): the suite
# with memchecks and logits against the base; decode at batch 1 / 2 / 16 (2 rounds); a 4,096-token prefill
# (2 rounds); k_embed alone under ncu, both builds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r4
sh scripts/gpu_verify.sh
AB_REPEAT=2 AB_DECODE=32 timeout 300 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
model=$(mktemp -d)/flash
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$model" > /dev/null 2>&1
BC="-m $model --backend cuda --numerics reference --fill-random"
for i in 1 2; do
  for v in new base; do
    b=$B/bench_cpu; [ $v = base ] && b=$B/bench_cpu.base
    timeout 60 $b $BC --prompt 4096 --decode 2 > $R/pf-$v-$i.txt 2>&1
    echo "pf-$v-$i: $(grep -m1 '^model' $R/pf-$v-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')"
  done
done
for v in new base; do
  b=$B/bench_cpu; [ $v = base ] && b=$B/bench_cpu.base
  timeout 120 ncu --clock-control none -k regex:'^k_embed' --metrics gpu__time_duration.sum $b $BC --prompt 16 \
    --decode 4 --batch 1 > $R/ncu-embed-$v.txt 2>&1
  echo "embed $v: $(grep gpu__time_duration $R/ncu-embed-$v.txt | awk '{print $NF}' | tr '\n' ' ')"
done
call_end

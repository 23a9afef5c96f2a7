#!/bin/sh
# Is the 4,096-token prefill slower with the F16 path's FP4 layout? closing/'s head measured 22,373 tok/s
# against v50's 23,868 (another machine). The same prefill new / base alternating, 3 rounds each (gpu_head.sh's
# command: 8 Flash layers, reference numerics), and the experts alone at prefill sizes (1,024 / 4,096 tokens).
# BASE=/tmp/base92 sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pf
T=$(mktemp -d)
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o "$T/f8" > /dev/null 2>&1
BC="-m $T/f8 --backend cuda --fill-random --numerics reference"
for i in 1 2 3; do
  for v in new base; do
    c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
    timeout 60 $c $BC --prompt 4096 --decode 2 > $R/pf-$v-$i.txt 2>&1
    echo "pf $v $i: $(grep -m1 '^model' $R/pf-$v-$i.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')"
  done
done
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 100 $c --experts-only --batch 1024,4096 > $R/experts-$v.txt 2>&1
  echo "== experts $v"; grep -E "^experts" $R/experts-$v.txt
done
call_end

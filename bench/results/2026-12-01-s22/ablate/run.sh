#!/bin/sh
# call 1: what each small kernel costs on a decode step's chain in the graph, by leaving it out
# (wip/ablate: DSV4_ABLATE=name skips the kernels launched through cuda_launch whose name it gives; the
# results are wrong, the timing is what the step costs without them). Batch 1 and 16, the base first and last.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r1; rm -rf $R; mkdir -p $R; touch $R/.start
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $R/machine.txt 2>&1
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 b=$2 a=$3
  DSV4_ABLATE=$a timeout 60 $B/bench_cpu -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n [$a]: rc=$? $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
PACKS=k_wg8_pack,k_moe_pack16,k_mma_pack_bf16,k_mma_pack,k_attn_qpack,k_round_bf16
for b in 1 16; do
  for a in none k_wg8_pack k_moe_pack16 k_mma_pack_bf16 k_mma_pack k_attn_qpack k_round_bf16 k_swiglu $PACKS k_hc_mix k_attn_md16 none; do
    run b$b-$(echo $a | cut -c1-40)-$(date +%s) $b $a
  done
done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# The clusters' last barrier with a relaxed arrive (main + the change): k_attn_one, the four-kernel path's
# combines, cluster_sum_parts (k_wg8's and mma.cu's parts) and wg_store: that barrier only keeps a block's
# shared memory until the others have read it, and cooperative groups' cluster.sync() put a MEMBAR.ALL.GPU
# before it (waiting for the block's global stores). The suite (memchecks; logits against the base, 8eb7a27),
# attention and the linears alone new / base (bench_kernels --attn-only / --linear-only at batch 1, 2 / 1, 16),
# decode at batch 1 / 2 / 16 (8 Flash layers, reference numerics, prompt 16, 32 steps, 4 rounds alternating).
# BASE=<a build-gpu of 8eb7a27> sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin relaxed-exit
sh scripts/gpu_verify.sh
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 90 $c --attn-only --batch 1,2 > $R/attn-$v.txt 2>&1
  echo "== attention $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | head -8
  timeout 90 $c --linear-only --batch 1,16 > $R/lin-$v.txt 2>&1
  echo "== linears $v"; grep -E "^(wq_a|wkv|wo_a|shared)" $R/lin-$v.txt
done
AB_REPEAT=4 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
cat $R/ab.txt
call_end

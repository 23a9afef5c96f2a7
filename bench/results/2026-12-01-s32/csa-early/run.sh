#!/bin/sh
# (prepared in s31 on wip/csa-early; run in s32 on main 5f951dd + the branch) CSA's one-pass attention at 1-2 tokens
# with its part's split from the predicted count min((pos + 1) / ratio, top-k) (what k_idx_topk writes): the
# cached window rows issued and the slot's page table in shared memory before griddepcontrol.wait, then cnt
# and idx loaded together after it (two dependent round trips fewer: cnt -> idx -> page -> row became
# idx -> row), a count other than the prediction redoing the part as before (test_ops_cuda's new CSA case
# checks that fallback against the four kernels, bit for bit). The same rows in the same order: logits byte
# for byte. The suite (memchecks; logits against the base), attention + indexer alone at batch 1 / 2 new /
# base (bench_kernels --attn-only: CSA 4k was 13.9 us, HCA 8.9), decode at batch 1 / 2 / 16 (3 rounds).
# BASE=<a build-gpu of main, 5f951dd> sh scripts/gpu_pack.sh, then a build-gpu dsv4 of ebb1c98 as .gpu/dsv4.ebb; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin csa-early
sh scripts/gpu_verify.sh
# s31's last commit (5f951dd, k_norm_rope's preload through row_in_flight) was not GPU-run: its logits against
# a build of ebb1c98 too (every commit since keeps the bits), byte for byte
xz -dc $B/dsv4.ebb.xz > $B/dsv4.ebb && chmod +x $B/dsv4.ebb && cp $B/dsv4.base $B/dsv4.main && cp $B/dsv4.ebb $B/dsv4.base && OUT=$R/ebb sh scripts/gpu_bits.sh; cp $B/dsv4.main $B/dsv4.base
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 90 $c --attn-only --batch 1,2 > $R/attn-$v.txt 2>&1
  echo "== attention $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | head -12
done
AB_REPEAT=3 AB_DECODE=32 timeout 250 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
cat $R/ab.txt
call_end

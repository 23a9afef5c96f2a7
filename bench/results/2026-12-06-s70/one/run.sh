#!/bin/sh
# s70 one/ (one H100 or H200; main at the bundle's commit, the base build 1f5e2a9 as *.base): four bit-neutral
# variants of k_attn_one, each behind a switch, against the default (the same binary) - the attention alone at 1-3
# tokens (4k, 128k), decode at batch 1 x 4k, then the checks of the variants (test_ops_cuda: every attention layout
# bit for bit against the CPU; the logits against the base build byte for byte; memcheck).
# - s69's w16/ (prepared, not run there): DSV4_ATTN_ONE_WARPS=16 (16 warps a block) and DSV4_ATTN_ONE_SP=1 (the
#   score tiles paired (i, i + half)).
# - DSV4_ATTN_ONE_PUSH=1 / 2 (new): each part's weighted sums stored into their heads' owners' shared memory before
#   the cluster barrier (1: float2 stores from the MMA fragments; 2: through the block's own ob, a warp a head's row
#   in 16-byte stores), so the combine after the barrier reads local shared memory and no block waits for the
#   others' reads before it exits. s64's trace (mrg/trace.tab, CSA 1 x 4k): the combine reading 8 remote blocks
#   ~1,900 cycles in every part, the exit wait ~150-350, of ~16,300 after the PDL wait. DSV4_ATTN_ONE_PUSH=3: the
#   owners still read the parts after the barrier, but four columns (16 bytes) a load instead of two (half the
#   remote requests: is the combine bound by their count?).
# Pack: AS=one BASE=<1f5e2a9's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin one
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
W="env DSV4_ATTN_ONE_WARPS=16" S="env DSV4_ATTN_ONE_SP=1" WS="env DSV4_ATTN_ONE_WARPS=16 DSV4_ATTN_ONE_SP=1"
P1="env DSV4_ATTN_ONE_PUSH=1" P2="env DSV4_ATTN_ONE_PUSH=2" P3="env DSV4_ATTN_ONE_PUSH=3"
call_kernels attn 2 "pu1=$P1 $B/bench_kernels;pu2=$P2 $B/bench_kernels;pu3=$P3 $B/bench_kernels;w16=$W $B/bench_kernels;sp8=$S $B/bench_kernels;sp16=$WS $B/bench_kernels;w8=$B/bench_kernels;base=$B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,131072"
call_attn_ab pu1 pu2 pu3 w16 sp8 sp16 base w8
call_snap
call_ab 2 "pu1=$P1 $B/bench_cpu --overlap;pu2=$P2 $B/bench_cpu --overlap;pu3=$P3 $B/bench_cpu --overlap;sp16=$WS $B/bench_cpu --overlap;w8=$B/bench_cpu --overlap" \
  "b1x4k:--batch 1 --context 4096"
sort "$R/ab.txt" | uniq
call_snap
for v in 1 2 3; do
  export DSV4_ATTN_ONE_PUSH=$v
  echo "== DSV4_ATTN_ONE_PUSH=$v"
  call_ops "attn|one"
  mv "$R/ops_cuda.txt.gz" "$R/ops_cuda-pu$v.txt.gz"
  call_bits
  mv "$R/bits.txt" "$R/bits-pu$v.txt"
  mv "$R/bits-run.txt" "$R/bits-run-pu$v.txt"
  if [ $v != 3 ]; then
    call_memcheck k_attn_one "--attn-only --batch 1,2 --contexts 4096,131072 --reps 1"
    mv "$R/san-k_attn_one.txt" "$R/san-k_attn_one-pu$v.txt"
  fi
  call_snap
done
unset DSV4_ATTN_ONE_PUSH
export DSV4_ATTN_ONE_WARPS=16 DSV4_ATTN_ONE_SP=1
echo "== DSV4_ATTN_ONE_WARPS=16 DSV4_ATTN_ONE_SP=1"
call_ops "attn|one"
mv "$R/ops_cuda.txt.gz" "$R/ops_cuda-sp16.txt.gz"
call_bits
mv "$R/bits.txt" "$R/bits-sp16.txt"
unset DSV4_ATTN_ONE_WARPS DSV4_ATTN_ONE_SP
call_end

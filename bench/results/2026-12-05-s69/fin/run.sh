#!/bin/sh
# s68 fin/ (main at the bundle's commit; the base build f3c796b as *.base), one call for two things (the device was
# scarce): (1) k_attn_one<HB, IXF> - the indexer's count and choices loaded right after the PDL wait, before q (the
# SASS had the 8 q loads issued first, and the rows' addresses wait on idx), and with 8 heads a block only those
# heads' q: the attention alone at 1-3 tokens (ixf / DSV4_ATTN_ONE_IXF=0 in the same binary / base), two rounds, and
# decode at batch 1 (4k, 128k), two rounds; (2) the whole GPU suite on the session's final tree (scripts/gpu_verify.sh:
# golden fixtures against transformers on CUDA, test_ops_cuda four ways, gpu_vs_cpu, sampling, overlap, prefix, expert
# parallelism, memchecks; the logits against f3c796b's byte for byte) - s68's engine changes (the window ring and the
# top-k buffers sized by what max_ctx reaches, the indexer's buffers only with CSA layers) run on the GPU too.
# Not run in s68 (the device lent none late in the session); run in s69 (README.md one level up). ixf.diff (beside this file) is the kernel change of
# (1), reverted on main until it is measured: apply it first (git apply bench/results/2026-12-05-s69/fin/ixf.diff;
# its IXF=false instances are f3c796b's SASS, scripts/sass_diff.py), build, and pack with a base build of the tree
# without it. If it does not pay, (2) alone still checks the s68 engine changes on the GPU (call_verify).
# Pack: AS=fin BASE=<the base's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin fin
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_kernels attn 2 "ixf=$B/bench_kernels;off=env DSV4_ATTN_ONE_IXF=0 $B/bench_kernels;base=$B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,32768,131072"
call_attn_ab ixf off base
call_ab 2 "ixf=$B/bench_cpu --overlap;off=env DSV4_ATTN_ONE_IXF=0 $B/bench_cpu --overlap" \
  "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072"
sort "$R/ab.txt" | uniq
call_snap
call_verify VERIFY_TIMEOUT=400
call_end

#!/bin/sh
# s42 call 2: the vendor library's block-scaled FP8 GEMM (cuBLASLt through PyTorch's torch._scaled_mm, the
# image's torch) at the prefill linears' shapes, against ours (bench_kernels --linear-only: k_wg8 / k_wgf8 /
# k_wgbf at 1,024 and 4,096 tokens) in the same call. Pack: main (NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin cublas
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$R/machine.txt" 2>&1
timeout 200 python3 bench/cublaslt_probe.py --tokens 1024,4096 > "$R/probe.txt" 2>&1
echo "probe exit $?"; cat "$R/probe.txt"
call_kernels lin 1 "ours=$B/bench_kernels" "--linear-only --batch 1024,4096"
cat "$R/lin-ours-1.txt"
call_end

#!/bin/sh
# Prepared in s44, run as s46's first call (320 s). What s44 changed
# and could not run: the CUDA backend's expert tables keyed by their weights' device memory and dropped when it is
# freed (cuda_moe_forget from c_free; keyed by the host array before, a table outlived its weights and the F16
# path's FP4 layout was not made for weights loaded at the same addresses). test_ops_cuda no longer keeps its
# expert arrays alive, so its MoE cases exercise the reuse. And the E4M3 codes' divisions by a power-of-two
# scale as multiplications by its exact reciprocal (quant.h: the same bits by construction, test_codecs checks
# them against the divisions on the CPU; every activation pack and FP8SIM on the GPU's critical path runs
# them). And the review's lt.cu mends: one plan builder for both GEMMs, the BF16 weights of one input converted
# once (cuda_linear_lt_bf over m weights). This call: test_ops_cuda under memcheck (the k_moe* kernels; expect ERROR SUMMARY 0 and every case
# passing), the whole suite (its gpu_bits against the base: identical expected), decode b1 / b16 new / base, the
# warm 4k prefill with --prefill-gemm cublaslt new / base (its test_ops_cuda cases are in the suite).
# Pack: BASE=<a build before both changes: /tmp/wmain (c3dcefa) if it is still there> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify-next
timeout 200 compute-sanitizer --tool memcheck --kernel-name kns=k_moe --error-exitcode 3 $B/test_ops_cuda > "$R/san-ops.txt" 2>&1
echo "memcheck test_ops_cuda exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$R/san-ops.txt" | tail -3
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
call_prefill 2 "lt-new=$B/bench_cpu;lt-base=$B/bench_cpu.base" "--prefill-gemm cublaslt"
call_end

#!/bin/sh
# s67 verify/ (one H100 or H200; main after s67's kernel changes): the whole GPU suite (scripts/gpu_verify.sh: golden
# fixtures against transformers on CUDA, test_ops_cuda four ways, gpu_vs_cpu, sampling, overlap, prefix, expert
# parallelism, the memchecks) with k_attn_one to 176 rows and 3 tokens and k_attn_mdp as the defaults, and the
# logits against the session's first commit (f4385ae), byte for byte (the changes are choices among kernels with
# the same sums).
# Pack: AS=verify BASE=<f4385ae's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
call_verify VERIFY_TIMEOUT=470
call_end

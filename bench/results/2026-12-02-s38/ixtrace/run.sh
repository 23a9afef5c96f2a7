#!/bin/sh
# s38 call 3: k_idx_topk's phases (a build with -DIX_TRACE: build-trace/bench_kernels, carried xz'd as
# .gpu/bench_kernels.ixtrace.xz): the indexer section of bench_kernels at batch 1 (top-512 of 1,024 / 8,192 /
# 32,768), thread 0's cycles between stamps for 8 calls of each size.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ixtrace
xz -dc $B/bench_kernels.ixtrace.xz > /tmp/bk-ix && chmod +x /tmp/bk-ix
timeout 200 /tmp/bk-ix --attn-only --batch 1 > $R/ixtrace.txt 2>&1; echo "exit $?"
grep -E "ixtrace|top-512" $R/ixtrace.txt | head -40
call_end

#!/bin/sh
# s27 call 4: where k_attn_one's time goes at batch 1, phase by phase: trace.diff (clock64 at each phase's end,
# thread 0, printed by the 8 blocks of token 0's first 16 heads) built with -DCMAKE_CUDA_FLAGS=-DAF_TRACE and
# packed as the *.base binaries (BASE=<that build>); bench_kernels --attn-only --batch 1
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 100 $B/bench_kernels.base --attn-only --batch 1 --reps 8 > $R/trace.txt 2>&1; echo "rc=$?"
grep -E "^(CSA|HCA)" $R/trace.txt | awk '{print $1,$2,$3,$4,$5,$7}'
grep -c aftrace $R/trace.txt
gzip -9 -n $R/trace.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

#!/bin/sh
# bench_kernels' decode tables with a batch above 64 (233bd3e: left out, a note on stderr; before, 64 timed
# again under the larger batch's name): the routed experts at 1 and 1,024 tokens, and --batch 0 refused.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bk-batches
timeout 60 $B/bench_kernels --experts-only --batch 1,1024 > $R/experts.txt 2>&1; echo "rc=$?" >> $R/experts.txt
timeout 20 $B/bench_kernels --batch 0 > $R/batch0.txt 2>&1; echo "rc=$?" >> $R/batch0.txt
cat $R/experts.txt $R/batch0.txt
call_end

#!/bin/sh
# s41 call 5 (short: the session's last ~320 s of device time): the scores kernel copying a tile's bytes whole
# when the tile lies in one page (Flash: a page's 64 keys; the rows' pointer table and its page-table loads only
# otherwise), and the epilogue without the heads-past-nh tests (such a head adds +0: its query and weight are
# zero). Against 584bcea (base): gpu_bits.sh (with the 2,100-token cases), test_ops_cuda, memcheck on the
# scores, the indexer alone new / base. Pack: BASE=<584bcea's build> NOTOK=1.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin ct
BITS_REPEAT=1 timeout 120 sh scripts/gpu_bits.sh
timeout 100 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops exit $?"; grep -E "PASSED|FAILED|indexer_topk, 34" $R/ops_cuda.txt | tail -5
gzip -9 $R/ops_cuda.txt
call_memcheck k_idx_score_tc "--attn-only --batch 4 --reps 1"
call_kernels attn 1 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
grep -A13 "FP4 keys" $R/attn-new-1.txt; grep -A13 "FP4 keys" $R/attn-base-1.txt
call_end

#!/bin/sh
# s46 call 5: k_attn_qk's two row tiles (and k_attn_pv's two value tiles) chosen by a select instead of indexed
# in a local array of pointers - the array sat in local memory (an LDL a chunk) and the tiles' fragment loads
# lost the shared space: 28 generic LD.E.128 in k_attn_qk<4, true>'s SASS, 0 now (all LDS.128). On top of
# fc8c2dc (epi/). The whole suite (gpu_bits against main's 9b93896: identical expected), the attention tables
# new / base (9b93896) 2 rounds, decode batch 8 / 16 / 64 new / base 2 rounds.
# Pack: BASE=<9b93896's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin lds
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh | tail -14
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
for f in "$R"/attn-*.txt; do echo "== $(basename "$f")"; grep -E "^(CSA|HCA)" "$f" | awk '{print $1, $2, $3, $4, $5, $7, $9}'; done
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
call_end

#!/bin/sh
# s64 owl/ (one H200; wip/one-wg merged with main, 852922f): a lean first run of k_attn_ow (DSV4_ATTN_OW=1), the
# one-pass attention at 3+ tokens, for a call that fits what was left of the session's device time (s61's ow/ runs
# the whole suite first). test_ops_cuda with it on (every tuned choice past the one-token path, bit for bit against
# the chain and k_attn_one's choices), the attention at 3 / 8 / 16 / 32 / 64 tokens with it, without
# it and main's build (one round), then its memcheck.
# Pack (on the branch): BASE=<main's build-gpu copied aside> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin owl
export DSV4_ATTN_OW=1
echo "== test_ops_cuda with DSV4_ATTN_OW=1"
timeout 150 $B/test_ops_cuda > "$R/ops_cuda_ow.txt" 2>&1
echo "exit $?" >> "$R/ops_cuda_ow.txt"
grep -E "FAIL|NOT CAUGHT|REJECTED|PASSED|exit|differ" "$R/ops_cuda_ow.txt" | head -20
unset DSV4_ATTN_OW
call_snap
call_kernels attn 1 "ow=env DSV4_ATTN_OW=1 $B/bench_kernels;off=$B/bench_kernels;main=$B/bench_kernels.base" \
  "--attn-only --batch 3,8,16,32,64"
call_attn_ab ow off main
call_snap
export DSV4_ATTN_OW=1 # last: what is left of the time
call_memcheck k_attn_ow "--attn-only --batch 16 --reps 1"
call_end

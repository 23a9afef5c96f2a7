#!/bin/sh
# OUTCOME: k_attn_one<16> is not launched at one token (one8: 8 heads a block for CSA too), so only the second
# profile ran: no_inst ~6 % of the samples - not instruction fetch; the cluster barrier's wait (UCGABAR_WAIT)
# the top instruction at 6.9 %, the rest spread over wait / barrier / long_sb.
# s60 onencu/: ncu's warp states by SASS line on k_attn_one<16> at one token (CSA 4k, the fifth launch), to see
# whether its ~2,000-cycle phases whatever their work (aftrace/, late/) are instruction fetch: the kernel is 5,376
# instructions (86 KB) run once by each of 32 blocks. Run on late/'s pack (its bench_kernels: k_attn_one with the
# late stores, which changed nothing: same phases).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin onencu
call_ncu one-b1 'k_attn_one<.int.16>' "--attn-only --batch 1 --reps 8" 40
call_ncu one8-b1 'k_attn_one<.int.8>' "--attn-only --batch 1 --reps 8" 20
call_end

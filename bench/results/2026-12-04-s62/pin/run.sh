#!/bin/sh
# s62 pin/ (PREPARED, NOT run; one H200): branch wip/pvw-pin - k_attn_pvw's stage no longer serialised. ptxas put
# every step's weight fragments (the selects m0 ? f.x : 0 ...) into one register quad, so each was rewritten while
# the wgmma before it still read it, and it waited for every wgmma of the stage (C7513; main's SASS has
# WARPGROUP.DEPBAR.LE gsb0 after each HGMMA of k_attn_pvw<1, 64, 6>). Pinned to registers of their own before the
# fence (an empty asm), the four HGMMA of a stage issue back to back; the only waits left are each stage's start
# and each part's end. No arithmetic changed: the same bits by construction (128 registers against 127 at one
# column, 193 against 202 at two). For the attention at 16-64 tokens (issue #8: 8-17 % of copy; the weighted sum
# 15.0 / 23.3 us of the chain at 16 / 64 tokens in s61's ncu). test_kernel_regs.sh now fails on any wgmma that ptxas
# serialises (C7513 / C7515 / C7520) in attn / linear / mma / moe_mma / wg8.cu.
# 1. the suite with its memchecks, the logits against main's dsv4 (call_verify).
# 2. the attention alone at 16 / 32 / 64 tokens, new against main, 3 rounds alternating (attn_ab.py's table).
# 3. decode at batch 16 / 64 (8 Flash layers, reference numerics), 2 rounds alternating.
# Pack (on the branch): BASE=<a build-gpu of main, copied aside first> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pin
call_verify
call_kernels attn 3 "new=$B/bench_kernels;main=$B/bench_kernels.base" "--attn-only --batch 16,32,64"
call_attn_ab new main
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;main=$B/bench_cpu.base --overlap" "b16:--batch 16" "b64:--batch 64"
call_end

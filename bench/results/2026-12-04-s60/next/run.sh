#!/bin/sh
# s60 next/ (PREPARED, NOT run: the session's device time was spent): KERNEL_NOTES' next item 2 - where the
# attention chain's time goes at 16 and 64 tokens now (CSA 4k: 30.6 / 64.5 us alone, s60 mdr/). ncu at the
# GPU's own clocks (no cache flush: each kernel reads what the one before wrote) on every k_attn kernel of two
# calls at 16 and 64 tokens (time, instructions, issue, DRAM bytes, warps), then the warp states by SASS line of
# the two largest at 16 tokens (k_attn_qk<4, true>, k_attn_pvw<1, 64, 6>) and of k_attn_md16 at 64 (s60
# aftrace/'s ncu had the kernel before mdr/ at 18.9 us, 95 registers: compare). Then dsv4 tune on this build
# (share/tune/h200.json's table was measured before s59's per-part numerics and s60's k_attn_md16) and decode at 8
# / 16 / 64 with its table against the built-in one: if it picks otherwise and the decode agrees, update
# share/tune/h200.json and tune.h's built-in rows (every choice gives the same bits; test_ops_cuda checks them).
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin next
for b in 16 64; do call_ncu_metrics b$b k_attn "--attn-only --batch $b --reps 4"; done
call_ncu qk-b16 'k_attn_qk<.int.4, .bool.1' "--attn-only --batch 16 --reps 8" 24
call_ncu pvw-b16 'k_attn_pvw<.int.1, .int.64, .int.6>' "--attn-only --batch 16 --reps 8" 24
call_ncu md16-b64 'k_attn_md16' "--attn-only --batch 64 --reps 8" 16
timeout 150 $B/dsv4 tune -o "$R/tune.json" > "$R/tune.txt" 2>&1
echo "== dsv4 tune exit $?"; cat "$R/tune.txt"
call_ab 2 "tuned=env DSV4_TUNE=$R/tune.json $B/bench_cpu --overlap;builtin=$B/bench_cpu --overlap" "b8:--batch 8" "b16:--batch 16" "b64:--batch 64"
call_end

#!/bin/sh
# s60 mdr/: k_attn_md16 with a running max and a running sum a lane (restarted where the lane's part changes,
# stored at [part][lane] in shared memory after each pair), each pair's part from a table of its 16-row block's
# filled once a round, the parts' maxima by redux.sync on ordered integers, the fragments' stores at a constant
# offset a pair: 1,936 SASS instructions (2,344), 72 registers (95), ~36 instructions a pair in the weights' loop.
# Claimed: the same bits (a numpy emulation of the old and new orders over 300 row counts from 1 to 2,500 gave
# the same maxima, per-lane sums and weights). The whole suite with the base's dsv4 (the logits byte for byte),
# then attention alone at 16 / 64 tokens and decode at 16 / 64 against main's build (d30c8ef's md16), one round.
# Pack: BASE=/tmp/wt-head/build-gpu KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh   (a worktree of main at 2130abe)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mdr
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); } # what has run comes back if the call is cut
VERIFY_TIMEOUT=400 sh scripts/gpu_verify.sh
snap
sleep 5
call_kernels attn 1 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 16,64"
for f in "$R"/attn-*.txt; do echo "$f $(grep -E '^(CSA|HCA)' "$f" | awk '{printf "%s ", $7}')"; done
snap
call_ab 1 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b16:--batch 16" "b64:--batch 64"
call_end

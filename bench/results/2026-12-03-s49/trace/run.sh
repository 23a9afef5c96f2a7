#!/bin/sh
# s49 call 7: where CSA's one-pass attention at 1 token × 4k spends the extra µs with 8 heads a block (one8/:
# 12.3 against 11.3 alone) - the gathers of each part's 80 rows (twice the blocks gathering) or elsewhere.
# bench_kernels.base here is a build of 55d47c5 + the DSV4_ATTN_ONE8_ROWS knob with -DAF_TRACE (k_attn_one's
# clock64 stamps, thread 0 of token 0's first head group); DSV4_ATTN_ONE8_ROWS=96 gives CSA's 96-row parts 8 heads
# a block, =1 none. python3 bench/af_trace.py trace/trace-8.txt.gz (and trace-16) prints the phases.
# Pack: BASE=<dir with that bench_kernels and any bench_cpu> LEAN=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin trace
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
for hb in 8 16; do
  rows=96; [ $hb = 16 ] && rows=1
  DSV4_ATTN_ONE8_ROWS=$rows timeout 100 $B/bench_kernels.base --attn-only --batch 1 --reps 8 > "$R/trace-$hb.txt" 2>&1
  echo "hb $hb rc=$? lines $(grep -c aftrace "$R/trace-$hb.txt")"
  DSV4_ATTN_ONE8_ROWS=$rows timeout 100 $B/bench_kernels --attn-only --batch 1 > "$R/attn-$hb.txt" 2>&1
  grep -E "^(CSA|HCA)" "$R/attn-$hb.txt" | awk '{print $1,$2,$3,$4,$5,$6,$7}' | head -4
  gzip -9 -n "$R/trace-$hb.txt"
  snap
done
call_end

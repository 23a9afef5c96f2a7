#!/bin/sh
# s49 call 3: k_attn_one with 8 heads a block (tune's "one8": 64 blocks at one token instead of 32, each part
# owning one head, so half the parts' sums read into each SM), against "one" (16 heads) in the same binary;
# one8.json is share/tune/h200.json with its first row's sum "one8".
# test_ops_cuda (every tuned choice, one8 among them, against the built-in bits), memcheck of k_attn_one under
# one8, the attention alone (three rounds), decode at 1 / 2 tokens and 1 x 128k (three rounds).
# Pack: BASE=<build-gpu of 557a942> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin one8
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
T=$PWD/bench/results/2026-12-03-s49/one8/one8.json
timeout 240 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1; echo "ops exit $?"
grep -E "FAIL|PASSED|tuned choice" "$R/ops_cuda.txt" | head; gzip -9 -n "$R/ops_cuda.txt"
export DSV4_TUNE=$T; call_memcheck k_attn_one "--attn-only --batch 1,2 --reps 1"; unset DSV4_TUNE
snap
call_kernels attn 3 "one8=env DSV4_TUNE=$T $B/bench_kernels;one=$B/bench_kernels" "--attn-only --batch 1,2"
for v in one8 one; do echo "== $v"; grep -E "^(CSA|HCA)" "$R/attn-$v-1.txt" | head -12; done
snap
call_ab 3 "one8=env DSV4_TUNE=$T $B/bench_cpu --overlap;one=$B/bench_cpu --overlap" "b1:--batch 1" "b2:--batch 2" \
  "b1c128k:--batch 1 --context 131072"
call_end

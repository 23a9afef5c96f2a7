#!/bin/sh
# s49 call 4: one8/'s kernel with its rule (8 heads a block only where a part has at most 64 rows: CSA from 4k keeps
# 16) and the built-in table's new first row (one8 at 1 token, one at 2), against 557a942's build (*.base: one at
# 1-2 tokens). The bits (gpu_bits.sh: logits against the base, repeated runs), test_ops_cuda, the attention alone
# new / base (two rounds), decode new / base at 1 x 16-token prompt, 1 x 4k, 1 x 128k, 2 (three rounds).
# Pack: BASE=<build-gpu of 557a942> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin one8b
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
BITS_REPEAT=3 timeout 200 sh scripts/gpu_bits.sh; echo "bits exit $?"
timeout 240 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1; echo "ops exit $?"
grep -E "FAIL|PASSED|tuned choice" "$R/ops_cuda.txt" | head; gzip -9 -n "$R/ops_cuda.txt"
snap
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,2"
for v in new base; do echo "== $v"; grep -E "^(CSA|HCA)" "$R/attn-$v-1.txt" | grep -E " 1 +(4096|32768) " | head -6; done
snap
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1c4k:--batch 1 --context 4096" \
  "b1c128k:--batch 1 --context 131072" "b2:--batch 2"
call_end

#!/bin/sh
# s54 cmp/: the compressors' emitting steps. In a node trace of 3018ea6 at batch 1 every fourth step took ~1,590
# us against ~1,355: in the three CSA layers both k_compress (the KV rows' and the indexer keys') ran 61 and 83
# us against ~6, on the attention's path - one thread of the block ran the indexer row's Hadamard, BF16 and
# FP4SIM and the FP4 pack, seven the KV row's FP8SIM, and the state's copies waited a round trip an element.
# Now by warps (sim.cuh, the serial versions' values) and with the copies' loads batched. The logits against
# 3018ea6's build byte for byte (gpu_bits.sh: its 3-layer, 2,100-token cases have a CSA layer, prefill and
# decode), test_ops_cuda, decode three rounds, a node trace at batch 1.
# Pack: BASE=<build-gpu of 3018ea6> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin cmp
BITS_REPEAT=2 sh scripts/gpu_bits.sh | tail -8
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
tail -2 "$R/ops.txt"
gzip -9 -n "$R/ops.txt"
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b16:--batch 16" "b64:--batch 64" "b1c4k:--batch 1 --context 4096"
call_trace new-b1 "--batch 1"
call_end

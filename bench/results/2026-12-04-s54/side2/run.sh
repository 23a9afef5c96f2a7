#!/bin/sh
# s54 side2/: DSV4_WG8_SIDE_KB's default 32 (the tree) against the build before it (bench_cpu.base, dsv4.base:
# the side budget 200) - logits byte for byte (gpu_bits.sh), test_ops_cuda, and decode at batch 1 to 64, three
# rounds alternating; newc: with DSV4_WG8_SCLAMP=1 on top (at most a block's groups + 1 stages everywhere).
# Pack: BASE=<build of the tree before the default> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin side2
BITS_REPEAT=1 sh scripts/gpu_bits.sh | tail -8
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
tail -3 "$R/ops.txt"
gzip -9 -n "$R/ops.txt"
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap;newc=env DSV4_WG8_SCLAMP=1 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b8:--batch 8" "b16:--batch 16" "b32:--batch 32" "b64:--batch 64"
call_end

#!/bin/sh
# s46 call 4: k_attn_pvw's epilogue through shared memory (one loop of column pairs a thread, the denominators
# and the rotation's (cos, sin) once a block: ~45 KB of code where it was 91-137 KB, 40 % of the kernel's warp
# samples in attn-src/ and most of them instruction-cache misses) and k_attn_md16's scores in registers (one
# round trip, up to 768 rows), both with the same operations on the same values: the whole suite (gpu_bits
# against main's 9b93896 build: identical expected), the attention tables new / base 2 rounds, decode batch 16,
# 64 and 16 x 128k new / base 2 rounds. Pack: BASE=<9b93896's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin epi
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh | tail -14
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
for f in "$R"/attn-*.txt; do echo "== $(basename "$f")"; grep -E "^(CSA|HCA)" "$f" | awk '{print $1, $2, $3, $4, $5, $7, $9}'; done
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b16:--batch 16" "b64:--batch 64" "b16c128k:--batch 16 --context 131072"
call_end

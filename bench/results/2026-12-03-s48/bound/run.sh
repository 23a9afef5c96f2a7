#!/bin/sh
# stripe/'s build plus the k-th's lower bound from groups of G threads' largest keys (G the largest power of two
# whose groups with keys are at least k: 16 in a cluster of 8 at 32,768 candidates; one thread's own largest
# before), the slices and group counts without 64-bit divisions (ix_slice), and more trace points in the bounds
# phase (the keys, the block barrier, the cluster barrier).
# *.base = the build before stripe/ (cltrace/'s). The trace, the indexer alone new / base with the cluster off and
# forced at 8, test_ops_cuda, memcheck, decode at 128k forced at 8 against off and at 1 x ~1M new / base, the
# whole suite last.
# Pack: BASE=<cltrace's build> NOTOK=1 sh scripts/gpu_pack.sh, then trace/ added to the bundle (see README)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bound
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
tar xJf .gpu/trace.tar.xz -C /tmp
DSV4_IX_CL=8 timeout 120 /tmp/trace/bench_kernels --attn-only --batch 1,16 > "$R/trace-cl8.txt" 2>&1
echo "trace rc $?"; grep ixtrace "$R/trace-cl8.txt" | grep -E "N (32768|262144)" | head -20
snap
for c in 0 8; do
  for v in new base; do
    bk=$B/bench_kernels; [ $v = base ] && bk=$B/bench_kernels.base
    DSV4_IX_CL=$c timeout 120 $bk --attn-only --batch 1,16 > "$R/attn-$v-cl$c-1.txt" 2>&1
    echo "$v cl$c: $(grep -E 'top-512 of (32768|262144)' "$R/attn-$v-cl$c-1.txt" | awk '{printf "%s@%s:%s ", $4, $5, $7}')"
  done
done
snap
timeout 200 $B/test_ops_cuda > "$R/ops_cuda1.txt" 2>&1; echo "ops exit $?"
grep -E "FAIL|PASSED|indexer_topk, 34" "$R/ops_cuda1.txt" | head; gzip -9 -n "$R/ops_cuda1.txt"
call_memcheck k_idx_topk "--attn-only --batch 1,16 --reps 1"
snap
call_ab 1 "cl8=env DSV4_IX_CL=8 $B/bench_cpu --overlap;off=env DSV4_IX_CL=0 $B/bench_cpu --overlap" "b1c128k:--batch 1 --context 131072" \
  "b16c128k:--batch 16 --context 131072"
call_ab 1 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1c1m:--batch 1 --context 1040000"
snap
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh | tail -14
call_end

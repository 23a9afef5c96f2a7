#!/bin/sh
# The top-k cluster's pass sums by stripes (each block adds its 2,048 / CL buckets over the cluster, then reads
# every stripe: 16-byte remote loads, two cluster barriers a pass) instead of each thread's two buckets from every
# block (2 CL scalar remote loads a thread, one barrier). *.base = the build before (the same session's cltrace/
# binaries); trace/bench_kernels = this code with -DIX_TRACE (the phases, now with each pass's two barriers and
# the block's globaltimer at its start). test_ops_cuda (indexer_large: clusters of 8 / 4 / 2 against the CPU),
# the indexer alone new / base with the cluster off and forced at 8 / 4 / 2, decode at 1 and 16 x 128k forced
# at 8 against off, memcheck of the cluster on the 1M rows.
# Pack: BASE=<cltrace's build> NOTOK=1 sh scripts/gpu_pack.sh, then trace/ added to the bundle (see README)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin stripe
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); }
tar xJf .gpu/trace.tar.xz -C /tmp
DSV4_IX_CL=8 timeout 120 /tmp/trace/bench_kernels --attn-only --batch 1,16 > "$R/trace-cl8.txt" 2>&1
echo "trace rc $?"; grep ixtrace "$R/trace-cl8.txt" | grep -E "N (32768|262144)" | head -20
snap
timeout 200 $B/test_ops_cuda > "$R/ops_cuda.txt" 2>&1; echo "ops exit $?"
grep -E "FAIL|PASSED|indexer_topk, 34" "$R/ops_cuda.txt" | head; gzip -9 -n "$R/ops_cuda.txt"
snap
for i in 1 2; do
  for c in 0 8 4 2; do
    for v in new base; do
      bk=$B/bench_kernels; [ $v = base ] && bk=$B/bench_kernels.base
      DSV4_IX_CL=$c timeout 120 $bk --attn-only --batch 1,16 > "$R/attn-$v-cl$c-$i.txt" 2>&1
      echo "$v cl$c ($i): $(grep -E 'top-512 of (32768|262144)' "$R/attn-$v-cl$c-$i.txt" | awk '{printf "%s@%s:%s ", $4, $5, $7}')"
    done
  done
  snap
done
call_ab 2 "cl8=env DSV4_IX_CL=8 $B/bench_cpu --overlap;off=env DSV4_IX_CL=0 $B/bench_cpu --overlap" "b1c128k:--batch 1 --context 131072" \
  "b16c128k:--batch 16 --context 131072"
snap
call_memcheck k_idx_topk "--attn-only --batch 1,16 --reps 1"
call_end

#!/bin/sh
# s53 review: the tree after the review's mends (k_route's trace no longer clears stamps at entry, its printer
# marks stamps older than a record's entry -1; hc_post's mixing bound read like its switch) - test_ops_cuda, and
# the -DROUTE_TRACE build (bench_cpu.base) printing k_route's phases at batch 1 and 8, once each.
# Pack: BASE=<build-gpu of this tree with -DCMAKE_CUDA_FLAGS=-DROUTE_TRACE> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin review
timeout 300 $B/test_ops_cuda > "$R/ops.txt" 2>&1
echo "== test_ops_cuda exit $?"
grep -E "FAIL|PASSED|FAILED" "$R/ops.txt" | head -8
gzip -9 -n "$R/ops.txt"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for bs in 1 8; do
  timeout 120 $B/bench_cpu.base -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 \
    --decode 64 --overlap --batch $bs > "$R/trace-b$bs.txt" 2>&1
  echo "== b$bs exit $? $(grep -o '[0-9.]* ms/step from the third' "$R/trace-b$bs.txt")"
  grep kroutetrace "$R/trace-b$bs.txt" | head -9
done
call_end

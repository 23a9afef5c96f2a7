#!/bin/sh
# s75 snap/: where the tree stands on an H100, against s57's build (0fd1e38b: the code of PERFORMANCE's "At a
# glance" H200 table) in the same call - no H200 has been lent since s68, and s58-s75's changes were each timed
# against the commit before only. new = this tree (main with the K-split linears' 16-byte sends up to 16-token
# tiles, v4/'s change narrowed: its first GPU run, so test_ops_cuda three ways and memcheck first); s57 = *.base.
# - test_ops_cuda (default; 64-token wg8 launches; mma.cu's streamed linears, all with the push), memcheck on k_wg8
#   at 64 tokens (the float-a-send path that v4/ did not run);
# - the linears alone at 32 / 64 tokens against main's 2f599e2d build (bench_kernels.main, from .gpu/mainbk.tar.xz);
# - the routed experts alone at 1-64 tokens and the attention at 1 / 16 / 64 tokens x 4k / 128k (new: the copy rate
#   and the naive layout in the same runs);
# - decode on 8 Flash-shaped layers at batch 1 / 4 / 8 / 16 / 64, new against s57, two rounds;
# - dsv4 serve (8 layers, the V4 tokenizer) driven by dsv4 bench at concurrency 1 / 8 / 16 / 64, new, then s57's
#   server if the call has the time.
# Pack: AS=snap BASE=/tmp/build-s57 sh scripts/gpu_pack.sh (with the tokenizer), and
#   tar cJf .gpu/mainbk.tar.xz -C /tmp/base-main bench_kernels (renamed bench_kernels.main below)
# Run: sh scripts/gpu_multi.sh snap=bench/results/2026-12-06-s75/snap/run.sh (~9 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
. scripts/serve_wait.sh
T0=$(date +%s)
call_begin snap
for c in "def:" "chunk:DSV4_WG8_CHUNK=64 DSV4_MOE_TILES_Y=2 DSV4_MOE_RB=2" \
  "stream:DSV4_WG8=0 DSV4_MMA_STREAM=2 DSV4_MMA_GPW=3 DSV4_CMP_SERIAL_MAX=1000000 DSV4_MOE_NTT=2"; do
  n=${c%%:*} e=${c#*:}
  timeout 200 env $e $B/test_ops_cuda > "$R/ops-$n.txt" 2>&1
  echo "test_ops_cuda $n exit $?"
  grep -E "FAIL|\[  (PASSED|FAILED)" "$R/ops-$n.txt" | head -5
  gzip -9 -n "$R/ops-$n.txt"
done
call_memcheck k_wg8 "--linear-only --batch 64 --reps 1"
call_snap
if tar xJf .gpu/mainbk.tar.xz -C /tmp 2>/dev/null; then
  mv /tmp/bench_kernels $B/bench_kernels.main
  call_kernels lin 2 "new=$B/bench_kernels;main=$B/bench_kernels.main" "--linear-only --batch 32,64"
fi
timeout 150 $B/bench_kernels --experts-only --batch 1,4,8,16,64 > "$R/experts.txt" 2>&1
grep -E "copy|experts" "$R/experts.txt" | head -12
timeout 200 $B/bench_kernels --attn-only --batch 1,16,64 --contexts 4096,131072 > "$R/attn.txt" 2>&1
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;s57=$B/bench_cpu.base --overlap" "b1:--batch 1" "b4:--batch 4" "b8:--batch 8" \
  "b16:--batch 16" "b64:--batch 64"
sort "$R/ab.txt" | uniq
call_snap
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/fs > /dev/null 2>&1
echo "== serve new ($(($(date +%s) - T0)) s in)"
serve_bench serve-new "1 8 16 64" -m /tmp/fs --fill-random
call_snap
if [ $(($(date +%s) - T0)) -lt 400 ]; then
  echo "== serve s57 ($(($(date +%s) - T0)) s in)"
  SB_BIN=$B/dsv4.base serve_bench serve-s57 "1 8 16 64" -m /tmp/fs --fill-random
fi
echo "== $(($(date +%s) - T0)) s"
call_end

#!/bin/sh
# s77 snap/: s75's snap/run.sh as it was, on an H200 only (the machine's name checked first: an H100 ran it in s75,
# and no H200 has been lent since s68). The tree is main at d93bcf82 (s76's HEAD: the code s75's snap/ timed plus
# 488134db, the same SASS), s57 = *.base (0fd1e38b: the code of PERFORMANCE's "At a glance" H200 table).
# Pack (in a checkout of d93bcf82): AS=snap BASE=/tmp/build-s57 sh scripts/gpu_pack.sh (with the tokenizer);
# no .gpu/mainbk.tar.xz (the linears' section is skipped).
# Run: sh scripts/gpu_multi.sh snap=bench/results/2026-12-06-s77/snap/run.sh (~9 min)
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "snap: not an H200 ($(nvidia-smi --query-gpu=name --format=csv,noheader)): nothing run"
  exit 0
fi
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

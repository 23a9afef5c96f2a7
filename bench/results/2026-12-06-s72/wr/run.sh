#!/bin/sh
# s72 wr/ (main at the bundle's commit: moew2/'s experts layout landed, the attention's and the indexer's working
# memory reserved at engine open; the base build c34e4e77 as *.base). Lean, for the ~700 s of device time left after
# failed starts: the new test_work_reserve, the tests whose code the change touched (GPU vs CPU end to end, golden
# on the GPU, expert parallelism on CUDA ranks), the logits against the base byte for byte, then decode at batch
# 1 / 16 against the base, one round.
# Run: sh scripts/gpu_multi.sh wr=bench/results/2026-12-06-s72/wr/run.sh
# Pack: AS=wr BASE=<c34e4e77's build-gpu> sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin wr
# run_t NAME [VAR=VALUE...] PROGRAM: a test into $R/NAME.txt (gzipped), its exit and its telling lines printed
run_t() {
  name=$1
  shift
  env DSV4_SRC="$PWD" "$@" > "$R/$name.txt" 2>&1
  echo "$name exit $?" | tee -a "$R/$name.txt"
  grep -E "growths|open at|gpu-vs-cpu|PASSED|FAILED|MISMATCH|skipped" "$R/$name.txt" | head -40
  gzip -9 -n "$R/$name.txt"
}
run_t work_reserve timeout 200 $B/test_work_reserve
run_t gpu_vs_cpu timeout 200 $B/test_gpu_vs_cpu
run_t golden_cuda DSV4_TEST_BACKEND=cuda timeout 200 $B/test_golden
run_t ep_cuda DSV4_TEST_BACKEND=cuda timeout 200 $B/test_ep
call_bits
call_snap
call_ab 1 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_end

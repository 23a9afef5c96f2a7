#!/bin/sh
# The GPU suite, run on the GPU machine in one call (see scripts/gpu_pack.sh):
# the GPU tests (golden, sampling + graphs, every op against the CPU, GPU vs
# CPU end to end), compute-sanitizer memcheck and racecheck, then timings of
# the CUDA and CPU backends on the fixtures and on Flash-shaped layers.
# TESTS=0, SANITIZE=0, TIMINGS=0 leave a part out (to fit a time limit;
# TESTS=ep runs only the expert-parallel test; SANITIZE=quick three memcheck runs;
# KERNELS=0 skips bench_kernels; FLASH_NUMERICS=reference times the Flash runs in reference numerics; FIXTURES=0 skips the fixture
# timings; BASELINE=1 times the *.base binaries of gpu_pack.sh BASE=... beside
# these, in the same run, or without them these binaries under BASE_ENV, e.g.
# BASE_ENV=DSV4_CUDA_MMA=0 for the GEMV linears);
# FLASH_LAYERS=N|max adds the Flash runs (FLASH_CONTEXT=C: each sequence's prompt ends at position C,
# bench_cpu --context: the decode steps pay that context's attention and indexer; a BASELINE build must know
# the flag); SANITIZE_FLASH=1 adds a memcheck of decode steps on 2 Flash-shaped layers (the real shapes: the
# fixtures are small; not yet run on the GPU when added); EP_FLASH=N adds expert parallelism
# over N ranks (one per GPU) on a Flash-shaped checkpoint of EP_LAYERS layers
# (default 43): decode timings, profile and serving. Results go to $OUT
# (default /tmp/dsv4-gpu-out).
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
# NCCL for --ep across GPUs (dsv4 opens libnccl.so.2 at run time): the system's, else PyTorch's wheel
if ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2; then
  nd=$(python3 -c 'import glob, site
for d in site.getsitepackages():
    for f in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2"): print(f.rsplit("/", 1)[0])' 2>/dev/null | head -1)
  [ -n "$nd" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nd"
fi
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off on shared machines
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  cat $B/commit.txt 2>/dev/null || echo "(a bundle without commit.txt: built before it was recorded)"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
# a base build carried along (gpu_pack.sh BASE=...): its logits against these, bit for bit; and (with or
# without one) the same prefill run again and again, every run's logits the first's (a race's trace)
if [ -x $B/dsv4.base ]; then echo "== logits against the base build, and repeated"; else echo "== logits repeated"; fi
sh scripts/gpu_bits.sh
. scripts/serve_wait.sh # serve_wait, serve_bench
if [ "${TESTS:-1}" != 0 ] && [ "${TESTS:-1}" != ep ]; then
echo "== golden tests on the GPU"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > "$OUT/golden_cuda.txt" 2>&1
echo "exit $?" >> "$OUT/golden_cuda.txt"
grep -E "max \\|err\\||batched|reference|PASSED|FAILED|ERROR|exit" "$OUT/golden_cuda.txt"
echo "== sampling on the GPU, decode graphs"
DSV4_SRC=$PWD timeout 300 $B/test_sample_cuda > "$OUT/sample_cuda.txt" 2>&1
echo "exit $?" >> "$OUT/sample_cuda.txt"
grep -E "agree|bit for bit|PASSED|FAILED|ERROR|exit" "$OUT/sample_cuda.txt"
echo "== overlapped steps on the GPU against one step at a time"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_overlap > "$OUT/overlap_cuda.txt" 2>&1
echo "exit $?" >> "$OUT/overlap_cuda.txt"
grep -E "overlapped =|PASSED|FAILED|ERROR|exit" "$OUT/overlap_cuda.txt"
echo "== prefix snapshots on the GPU: a sequence from a kept state against the whole prompt"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_prefix > "$OUT/prefix_cuda.txt" 2>&1
echo "exit $?" >> "$OUT/prefix_cuda.txt"
grep -E "== |PASSED|FAILED|ERROR|differ|exit" "$OUT/prefix_cuda.txt"
echo "== the attention's and the indexer's working memory reserved at engine open: no step grows it"
DSV4_SRC=$PWD timeout 300 $B/test_work_reserve > "$OUT/work_reserve.txt" 2>&1
echo "exit $?" >> "$OUT/work_reserve.txt"
grep -E "growths|open at|PASSED|FAILED|ERROR|exit" "$OUT/work_reserve.txt"
echo "== every CUDA op against its CPU twin"; timeout 300 $B/test_ops_cuda > "$OUT/ops_cuda.txt" 2>&1; echo "exit $?" >> "$OUT/ops_cuda.txt"; grep -E "FAIL|NOT CAUGHT|REJECTED|PASSED|exit" "$OUT/ops_cuda.txt"
# the streamed decode FP8 kernel (k_mma_fp8s) takes only large shapes by default: forced on the tests' small
# ones, with several tiles shared between warps (DSV4_MMA_GPW=3); DSV4_WG8=0 sends reference numerics'
# FP8 linears there too (mma.cu's F16 path, which wg8.cu replaces by default); DSV4_CMP_SERIAL_MAX
# sends every step's compressors through the serial walk (by default steps of more than 4 tokens a
# sequence take the parallel rows); DSV4_MOE_NTT=2 gives every expert tile two n tiles (prefill's)
echo "== every CUDA op, decode linears streamed for every shape, reference FP8 on mma.cu, serial compressors, 16-pair expert tiles, the linears' parts through the cluster barrier"; DSV4_WG8=0 DSV4_LIN_ASYNC=0 DSV4_MMA_STREAM=2 DSV4_MMA_GPW=3 DSV4_CMP_SERIAL_MAX=1000000 DSV4_MOE_NTT=2 timeout 300 $B/test_ops_cuda > "$OUT/ops_cuda_stream.txt" 2>&1; echo "exit $?" >> "$OUT/ops_cuda_stream.txt"; grep -E "FAIL|PASSED|exit" "$OUT/ops_cuda_stream.txt"
# wg8.cu's launches of 64 tokens: its chunk loops (several packs, several launches) on every case; the
# routed experts' k_moe16 in launches of two tiles (DSV4_MOE_TILES_Y: by default 65,535, the grid's limit), with
# two row blocks a block wherever allowed (DSV4_MOE_RB=2: by default only where many blocks are launched; it
# takes the place of DSV4_MOE_BP's ring, whose two tile sizes test_ops_cuda checks on every expert case)
echo "== every CUDA op, wg8 in 64-token launches, expert tiles two a launch, two row blocks a block"; DSV4_WG8_CHUNK=64 DSV4_MOE_TILES_Y=2 DSV4_MOE_RB=2 timeout 300 $B/test_ops_cuda > "$OUT/ops_cuda_chunk.txt" 2>&1; echo "exit $?" >> "$OUT/ops_cuda_chunk.txt"; grep -E "FAIL|PASSED|exit" "$OUT/ops_cuda_chunk.txt"
# the prefill kernels (wgmma: k_moe_wg, k_wgbf, k_wgf8; the same bits as decode's) for every call they can
# take, on every case and end to end against the CPU
echo "== every CUDA op, and GPU vs CPU, with the prefill kernels for every call"; DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 timeout 300 $B/test_ops_cuda > "$OUT/ops_cuda_prefill.txt" 2>&1; echo "exit $?" >> "$OUT/ops_cuda_prefill.txt"; grep -E "FAIL|PASSED|exit" "$OUT/ops_cuda_prefill.txt"
DSV4_SRC=$PWD DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 timeout 300 $B/test_gpu_vs_cpu > "$OUT/gpu_vs_cpu_prefill.txt" 2>&1; echo "exit $?" >> "$OUT/gpu_vs_cpu_prefill.txt"; grep -E "FAIL|PASSED|exit" "$OUT/gpu_vs_cpu_prefill.txt"
fi
if [ "${TESTS:-1}" != 0 ]; then
echo "== expert parallelism, CUDA ranks on $(nvidia-smi -L | wc -l) GPU(s), against one rank"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_ep > "$OUT/ep_cuda.txt" 2>&1
echo "exit $?" >> "$OUT/ep_cuda.txt"
grep -E "dsv4: [0-9]+ x|bit for bit|PASSED|FAILED|ERROR|exit" "$OUT/ep_cuda.txt" | sort | uniq -c
fi
if [ "${TESTS:-1}" != 0 ] && [ "${TESTS:-1}" != ep ]; then
echo "== CUDA vs CPU, every fixture, plain and reference numerics"
DSV4_SRC=$PWD timeout 300 $B/test_gpu_vs_cpu > "$OUT/gpu_vs_cpu.txt" 2>&1
echo "exit $?" >> "$OUT/gpu_vs_cpu.txt"
grep -E "^gpu-vs-cpu|tie:|MISMATCH|PASSED|FAILED|ERROR|exit" "$OUT/gpu_vs_cpu.txt"
fi
if [ "${SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
  # memcheck and racecheck over every fixture: prefill, decode steps replayed as graphs, GPU sampling,
  # plain and reference numerics; then the sampling kernel's own test. A clean run prints
  # "ERROR SUMMARY: 0 errors" for each.
  echo "== compute-sanitizer"
  : > "$OUT/sanitizer.txt"
  san() { # tool, label, command...
    t=$1 l=$2
    shift 2
    echo "-- $t $l" >> "$OUT/sanitizer.txt"
    DSV4_SRC=$PWD timeout 240 compute-sanitizer --tool "$t" --error-exitcode 3 "$@" >> "$OUT/sanitizer.txt" 2>&1
    echo "exit $?" >> "$OUT/sanitizer.txt"
  }
  if [ "${SANITIZE:-1}" = quick ]; then # five runs: FP32/BF16, FP8 + MXFP4 reference, NVFP4, the prefill kernels
    san memcheck "tiny_a plain" $B/bench_cpu -m tests/fixtures/tiny_a --prompt 40 --decode 6 --batch 3 --backend cuda --numerics plain
    san memcheck "q_stock reference" $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda
    san memcheck "q_nvfp4 plain" $B/bench_cpu -m tests/fixtures/q_nvfp4 --prompt 40 --decode 6 --batch 3 --backend cuda --numerics plain
    # the prefill kernels (k_moe_wg, k_wgbf, k_wgf8) for every call they can take
    DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 san memcheck "q_mma reference, prefill kernels" $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda
    DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 san memcheck "q_mma plain, prefill kernels" $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda --numerics plain
    # the sampler's draw over the row's blocks (k_sample<true>, a cooperative launch) at Flash's vocabulary
    DSV4_SAMPLE_QUICK=3 san memcheck "test_sample_cuda (129,280 ids, cooperative)" $B/test_sample_cuda
    # overlapped steps: the picks fed on the device (k_tok_feed reading mapped memory), two sample slots
    DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda san memcheck "test_overlap" $B/test_overlap
    # prefix snapshots: the slots and pages copied on the stream, shared pages read by two sequences
    DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda san memcheck "test_prefix" $B/test_prefix
  else
  for f in tiny_a tiny_b tiny_c tiny_d q_stock q_nvfp4 q_mma; do
    san memcheck "$f plain" $B/bench_cpu -m tests/fixtures/$f --prompt 40 --decode 6 --batch 3 --backend cuda --numerics plain
  done
  san memcheck "q_stock reference" $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda
  san memcheck "tiny_b reference" $B/bench_cpu -m tests/fixtures/tiny_b --prompt 40 --decode 6 --batch 3 --backend cuda
  # q_mma: the tensor-core experts (its widths are multiples of 128), w4a16 and --moe-backend w4a8
  san memcheck "q_mma reference" $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda
  san memcheck "q_mma reference w4a8" $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda --moe-backend w4a8
  DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 san memcheck "q_mma reference, prefill kernels" $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda
  DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 san memcheck "q_mma plain, prefill kernels" $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda --numerics plain
  for f in tiny_a q_nvfp4; do
    san racecheck "$f plain" $B/bench_cpu -m tests/fixtures/$f --prompt 40 --decode 6 --batch 3 --backend cuda --numerics plain
  done
  san racecheck "q_stock reference" $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda
  san racecheck "q_mma reference w4a8" $B/bench_cpu -m tests/fixtures/q_mma --prompt 40 --decode 6 --batch 3 --backend cuda --moe-backend w4a8
  DSV4_SAMPLE_QUICK=1 san memcheck "test_sample_cuda (quick)" $B/test_sample_cuda
  DSV4_SAMPLE_QUICK=2 san racecheck "test_sample_cuda (kernel, 5 settings)" $B/test_sample_cuda
  DSV4_SAMPLE_QUICK=3 san racecheck "test_sample_cuda (129,280 ids, cooperative)" $B/test_sample_cuda
  fi
  if [ "${SANITIZE_FLASH:-0}" = 1 ]; then # Flash's shapes (the fixtures' widths are small): batch 16 and 1
    $B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/dsv4-san-f2 > /dev/null 2>&1
    for b in 16 1; do
      san memcheck "flash 2 layers reference batch $b" $B/bench_cpu -m /tmp/dsv4-san-f2 --fill-random --prompt 4 --decode 3 --batch $b --backend cuda
    done
  fi
  grep -E "^-- |ERROR SUMMARY|RACECHECK SUMMARY|^exit" "$OUT/sanitizer.txt" | paste - - - | head -40
fi
if [ "${TIMINGS:-1}" != 0 ]; then
echo "== timings"
BKB= BCB= # the baseline's bench binaries (BASELINE=1)
if [ "${BASELINE:-0}" = 1 ]; then
  if [ -x $B/bench_kernels.base ]; then BKB=$B/bench_kernels.base BCB=$B/bench_cpu.base
  elif [ -n "${BASE_ENV:-}" ]; then BKB="env $BASE_ENV $B/bench_kernels" BCB="env $BASE_ENV $B/bench_cpu"; fi
fi
# every decode linear shape of a Flash layer and the routed experts at batch 1/8/16/64, beside the
# device-to-device copy bandwidth measured in the same run
if [ "${KERNELS:-1}" != 0 ]; then
timeout 240 $B/bench_kernels --json "$OUT/kernels.json" > "$OUT/kernels.txt" 2>&1
tail -60 "$OUT/kernels.txt"
fi
if [ "${KERNELS:-1}" != 0 ] && [ -n "$BKB" ]; then # the earlier build's kernels, same run
  timeout 240 $BKB --json "$OUT/kernels-base.json" > "$OUT/kernels-base.txt" 2>&1
  tail -60 "$OUT/kernels-base.txt"
fi
if [ "${FIXTURES:-1}" != 0 ]; then
# decode as served (graphs, GPU sampling) against op by op with host argmax (the path before graphs)
# in the same run, at batch 1 and 8, and the CPU
for f in tiny_a q_stock q_nvfp4 q_mma; do
  for bs in 1 8; do
    $B/bench_cpu -m tests/fixtures/$f --prompt 256 --decode 64 --batch $bs --backend cuda --numerics plain \
      --json "$OUT/bench-$f-cuda-b$bs.json" 2>&1 | tail -1
    $B/bench_cpu -m tests/fixtures/$f --prompt 256 --decode 64 --batch $bs --backend cuda --numerics plain \
      --no-graphs --host-argmax --json "$OUT/bench-$f-cuda-eager-b$bs.json" 2>&1 | tail -1
  done
  $B/bench_cpu -m tests/fixtures/$f --prompt 256 --decode 64 --backend cpu --numerics plain \
    --json "$OUT/bench-$f-cpu.json" 2>&1 | tail -1
done
fi
if [ "${FLASH_LAYERS:-0}" != 0 ]; then
  # Flash-shaped layers at several batch sizes, with the per-op-family profile. The checkpoint is sparse
  # (mkmodel --sparse: its matrices are holes, ~4 MB of disk per layer) and bench_cpu --fill-random
  # generates them on the GPU at load, so the disk does not bound the layer count. FLASH_LAYERS=max: as
  # many layers as fit in the GPU's free memory less FLASH_HEADROOM_GIB (default 10) for the KV pool and
  # scratch at batch 64; the bytes per layer come from two probe checkpoints of 3 and 5 layers (one CSA
  # and one HCA layer apart, the pattern of every layer from the fourth on); at most Flash's 43.
  if [ -x $B/test_synth ]; then # the GPU's fill kernel against the host's bytes, first
    timeout 120 $B/test_synth > "$OUT/synth.txt" 2>&1
    echo "exit $?" >> "$OUT/synth.txt"
    grep -E "GPU|cuda|PASSED|FAILED|ERROR|exit" "$OUT/synth.txt"
  fi
  if [ "$FLASH_LAYERS" = max ]; then
    rm -rf /tmp/flash-probe3 /tmp/flash-probe5
    $B/dsv4 mkmodel --preset flash --layers 3 --sparse -o /tmp/flash-probe3 >/dev/null 2>&1
    $B/dsv4 mkmodel --preset flash --layers 5 --sparse -o /tmp/flash-probe5 >/dev/null 2>&1
    m3=$($B/dsv4 inspect -m /tmp/flash-probe3 --json | sed -n 's/.*"main_model_bytes": *\([0-9]*\).*/\1/p')
    m5=$($B/dsv4 inspect -m /tmp/flash-probe5 --json | sed -n 's/.*"main_model_bytes": *\([0-9]*\).*/\1/p')
    free_mib=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1 | tr -d ' ')
    rm -rf /tmp/flash-probe3 /tmp/flash-probe5
    if [ -n "$m3" ] && [ -n "$m5" ] && [ -n "$free_mib" ]; then
      FLASH_LAYERS=$(awk -v m3="$m3" -v m5="$m5" -v f="$free_mib" -v h="${FLASH_HEADROOM_GIB:-10}" 'BEGIN {
        per = (m5 - m3) / 2; n = 5 + int((f * 1048576 - h * 1073741824 - m5) / per)
        if (n > 43) n = 43; if (n < 1) n = 1; print n }')
      echo "FLASH_LAYERS=max: $FLASH_LAYERS layers ($free_mib MiB free, $(((m5 - m3) / 2 / 1048576)) MiB per layer," \
        "${FLASH_HEADROOM_GIB:-10} GiB headroom)" | tee "$OUT/flash-layers.txt"
    else
      echo "FLASH_LAYERS=max: cannot size (inspect or nvidia-smi failed); skipping the Flash timings"
      FLASH_LAYERS=0
    fi
  fi
fi
if [ "${FLASH_LAYERS:-0}" != 0 ]; then
  rm -rf /tmp/flash
  $B/dsv4 mkmodel --preset flash --layers "$FLASH_LAYERS" --sparse -o /tmp/flash >/dev/null 2>&1
  $B/dsv4 inspect -m /tmp/flash > "$OUT/inspect-flash.txt"
  tail -6 "$OUT/inspect-flash.txt"
  # per batch size: the prefill (profiled), FLASH_DECODE decode steps timed as served (graphs, GPU
  # sampling), then FLASH_PROFILE_STEPS more op by op with the profile
  for bs in ${FLASH_BATCHES:-1 8 16 64}; do
    timeout 280 $B/bench_cpu -m /tmp/flash --prompt "${FLASH_PROMPT:-16}" --decode "${FLASH_DECODE:-8}" --batch "$bs" \
      ${FLASH_CONTEXT:+--context $FLASH_CONTEXT} --backend cuda --numerics "${FLASH_NUMERICS:-plain}" --fill-random --json "$OUT/bench-flash-b$bs.json" \
      --profile "$OUT/profile-flash-b$bs.json" --profile-steps "${FLASH_PROFILE_STEPS:-3}" \
      > "$OUT/profile-flash-b$bs.txt" 2>&1
    grep -m1 "^model " "$OUT/profile-flash-b$bs.txt" || tail -1 "$OUT/profile-flash-b$bs.txt"
    if [ -n "$BCB" ]; then # the earlier build, same run, same checkpoint
      timeout 200 $BCB -m /tmp/flash --prompt "${FLASH_PROMPT:-16}" --decode "${FLASH_DECODE:-8}" \
        ${FLASH_CONTEXT:+--context $FLASH_CONTEXT} --batch "$bs" --backend cuda --numerics "${FLASH_NUMERICS:-plain}" --fill-random --json "$OUT/bench-flash-b$bs-base.json" \
        > "$OUT/bench-flash-b$bs-base.txt" 2>&1
      grep -m1 "^model " "$OUT/bench-flash-b$bs-base.txt" | sed 's/^/base: /' || tail -1 "$OUT/bench-flash-b$bs-base.txt"
    fi
  done
fi
if [ "${SERVE_FLASH:-0}" != 0 ] && [ -f $B/tokenizer-v4.json ]; then
  # dsv4 serve on a Flash-shaped checkpoint of SERVE_LAYERS layers (default 8: the prefill of the present
  # kernels bounds how many requests fit a call) driven by dsv4 bench at each concurrency
  rm -rf /tmp/flash-serve
  $B/dsv4 mkmodel --preset flash --layers "${SERVE_LAYERS:-8}" --sparse -o /tmp/flash-serve >/dev/null 2>&1
  serve_bench serve-flash "${SERVE_CONCURRENCY:-1 8 16 64}" -m /tmp/flash-serve --fill-random
  if [ "${SERVE_LONG:-0}" = 1 ]; then
    # 4,000-token prompts (TTFT is the prefill's), ours and --prefill-gemm cublaslt: serve-flash-long[-lt]-c*.json
    SB_INPUT=4000 SB_CTX=8192 serve_bench serve-flash-long "1 4" -m /tmp/flash-serve --fill-random
    SB_INPUT=4000 SB_CTX=8192 serve_bench serve-flash-long-lt "1 4" -m /tmp/flash-serve --fill-random \
      --prefill-gemm cublaslt
  fi
fi
if [ "${HF_BASELINE:-0}" = 1 ]; then
  # transformers' eager model on HF_LAYERS Flash layers (HF_ARGS: more options, e.g. --batch 1,8)
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout "${HF_TIMEOUT:-500}" python3 bench/hf_baseline.py --layers "${HF_LAYERS:-4}" ${HF_ARGS:-} \
    --json "$OUT/hf-baseline.json" > "$OUT/hf-baseline.txt" 2>&1
  grep -E "^hf-baseline|FAILED" "$OUT/hf-baseline.txt" || tail -5 "$OUT/hf-baseline.txt"
fi
fi
if [ "${EP_FLASH:-0}" -gt 1 ] 2>/dev/null; then
  # Expert parallelism over EP_FLASH ranks, one per GPU, on a Flash-shaped checkpoint of EP_LAYERS layers:
  # decode timed as served (op by op: no graphs under expert parallelism; GPU sampling) and with host sampling, the
  # profile with its communication row, then dsv4 serve driven by dsv4 bench at each concurrency.
  n=${EP_FLASH}
  rm -rf /tmp/flash-ep
  $B/dsv4 mkmodel --preset flash --layers "${EP_LAYERS:-43}" --sparse -o /tmp/flash-ep >/dev/null 2>&1
  $B/dsv4 inspect -m /tmp/flash-ep | tail -3
  for bs in ${EP_BATCHES:-1 8 16}; do
    timeout 240 $B/bench_cpu -m /tmp/flash-ep --prompt 16 --decode "${FLASH_DECODE:-8}" --batch "$bs" --backend cuda \
      --numerics plain --fill-random --ep "$n" --json "$OUT/bench-flash-ep$n-b$bs.json" \
      --profile "$OUT/profile-flash-ep$n-b$bs.json" --profile-steps 3 > "$OUT/profile-flash-ep$n-b$bs.txt" 2>&1
    grep -m1 "^model " "$OUT/profile-flash-ep$n-b$bs.txt" || tail -3 "$OUT/profile-flash-ep$n-b$bs.txt"
  done
  # the same at batch 1 op by op with host sampling: the path without graphs
  timeout 240 $B/bench_cpu -m /tmp/flash-ep --prompt 16 --decode "${FLASH_DECODE:-8}" --batch 1 --backend cuda \
    --numerics plain --fill-random --ep "$n" --no-graphs --host-argmax --json "$OUT/bench-flash-ep$n-b1-eager.json" \
    > "$OUT/bench-flash-ep$n-b1-eager.txt" 2>&1
  grep -m1 "^model " "$OUT/bench-flash-ep$n-b1-eager.txt" || tail -3 "$OUT/bench-flash-ep$n-b1-eager.txt"
  grep -E "communication|routed" "$OUT/profile-flash-ep$n-b1.txt" | head -4
  if [ -f $B/tokenizer-v4.json ]; then
    serve_bench "serve-flash-ep$n" "${EP_CONCURRENCY:-1 8 16}" -m /tmp/flash-ep --fill-random --ep "$n"
  fi
fi

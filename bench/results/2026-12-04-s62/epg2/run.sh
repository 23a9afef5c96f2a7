#!/bin/sh
# s62 epg2/ (PREPARED, NOT run; kind nvidia-h200-x2, after epg/ passed on one H200): the full model's shape on the
# two H200s it needs, with decode graphs under expert parallelism (branch wip/ep-graphs). 43 Flash-shaped layers
# (mkmodel --sparse, 145 GiB generated at load), --ep 2 (one rank a GPU, NCCL), reference numerics (the server's
# default): decode with graphs against DSV4_EP_GRAPHS=0 (op by op, the path every figure in PARALLEL.md ran) at
# batch 1 / 16, graphs alone at 8 / 64; then dsv4 serve --ep 2 driven by dsv4 bench at concurrency 1 / 16 / 64.
# Last measured (2026-11-29, v5's kernels, plain numerics, op by op): 25.4 ms a step at batch 1. First test_ep
# with NCCL between the GPUs (graphs on).
# Pack (on the branch): sh scripts/gpu_pack.sh (the tests and the V4 tokenizer: serving needs it).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
. scripts/serve_wait.sh
if ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2; then
  nd=$(python3 -c 'import glob, site
for d in site.getsitepackages():
    for f in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2"): print(f.rsplit("/", 1)[0])' 2>/dev/null | head -1)
  [ -n "$nd" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nd"
fi
export NCCL_NVLS_ENABLE=0
call_begin epg2
nvidia-smi topo -m > "$R/topo.txt" 2>&1
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 200 $B/test_ep > "$R/ep_cuda.txt" 2>&1
echo "test_ep (NCCL, graphs) exit $?"
grep -E "dsv4: [0-9]+ x|without NCCL|PASSED|FAILED|ERROR" "$R/ep_cuda.txt" | sort | uniq -c
gzip -9 -n "$R/ep_cuda.txt"
call_snap
$B/dsv4 mkmodel --preset flash --layers 43 --sparse -o /tmp/flash-ep > /dev/null 2>&1
run() { # NAME BATCH [env...]
  name=$1 b=$2
  shift 2
  timeout 150 env "$@" $B/bench_cpu -m /tmp/flash-ep --backend cuda --numerics reference --fill-random --prompt 16 \
    --decode 32 --batch "$b" --ep 2 > "$R/d-$name-b$b.txt" 2>&1
  echo "batch $b $name: $(grep -oE '[0-9.]+ ms/step from the third' "$R/d-$name-b$b.txt")"
  grep -hE "expert parallel|without NCCL" "$R/d-$name-b$b.txt" | head -2 # NCCL (its version) or the loopback
}
for b in 1 16; do
  run graphs $b
  run nographs $b DSV4_EP_GRAPHS=0
done
call_snap
run graphs 8
run graphs 64
call_snap
# without --ep: the weights do not fit one H200, so dsv4 takes expert parallelism over two itself (f109b25)
timeout 150 $B/bench_cpu -m /tmp/flash-ep --backend cuda --numerics reference --fill-random --prompt 16 --decode 8 \
  --batch 1 > "$R/d-auto-b1.txt" 2>&1
echo "without --ep: exit $? - $(grep -m1 -oE 'do not fit.*' "$R/d-auto-b1.txt")"
serve_bench serve-ep2 "1 16 64" -m /tmp/flash-ep --fill-random --ep 2
call_end

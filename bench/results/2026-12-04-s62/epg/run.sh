#!/bin/sh
# s62 epg/ (PREPARED, NOT run; one H200): decode graphs under expert parallelism, branch wip/ep-graphs. Each
# rank's graph of a decode step is cut at every MoE layer's all-reduce (graph_piece), which runs between two
# pieces at every step, outside any graph; a replay launches each rank's pieces in order with the all-reduces
# between them. On one GPU the ranks share it and the all-reduce is the host loopback, so this call checks the
# bits and the pieces' bookkeeping; epg2/ (two H200s, NCCL) times the full model.
# 0. a hang probe first (60 s): bench_cpu --ep 2 on tiny_a, 16 decode steps (a capture in pieces, then replays).
# 1. test_ep with CUDA ranks (every fixture and models/tiny, plain and reference, --ep 2 / 3 / 16, every read
#    comparing the ranks' copies: test_ep sets DSV4_EP_CHECK=1): 12 decode steps a sequence, so graphs are captured
#    at the second and replayed ten times - logits bit for bit the single rank's. (Op by op, DSV4_EP_GRAPHS=0, is
#    the path every suite has run.)
# 2. memcheck of an expert-parallel decode on 2 Flash layers with graphs (pieces captured and replayed).
# 3. bench_cpu --ep 2 on 8 Flash-shaped layers (both ranks on this GPU, loopback: the host copies the slots at
#    each all-reduce, so it is not the two-GPU figure) with graphs and with DSV4_EP_GRAPHS=0, batch 1 / 16, and
#    the single rank beside them (the bits are 1's: test_ep compares every decode step's logits).
# Pack (on the branch): NOTOK=1 sh scripts/gpu_pack.sh (its test_ep is what 1 runs).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin epg
timeout 60 $B/bench_cpu -m tests/fixtures/tiny_a --backend cuda --prompt 8 --decode 16 --batch 2 --ep 2 \
  > "$R/probe.txt" 2>&1
rc=$?
echo "hang probe exit $rc: $(grep -oE '[0-9.]+ ms/step from the third' "$R/probe.txt")"
if [ $rc -ne 0 ]; then tail -5 "$R/probe.txt"; call_end; exit 1; fi
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 240 $B/test_ep > "$R/ep_cuda.txt" 2>&1
echo "test_ep (graphs) exit $?"
grep -E "dsv4: [0-9]+ x|PASSED|FAILED|ERROR" "$R/ep_cuda.txt" | sort | uniq -c
call_snap
gzip -9 -n "$R"/ep_cuda*.txt
call_snap
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $B/bench_cpu -m /tmp/f2 --backend cuda \
  --numerics reference --fill-random --prompt 16 --decode 6 --batch 2 --ep 2 > "$R/san-ep2.txt" 2>&1
echo "== memcheck ep2 graphs exit $?"
grep -E "ERROR SUMMARY|ms/step" "$R/san-ep2.txt" | tail -2
call_snap
# the full Flash shape (145 GiB) on this one GPU without --ep: refused at start-up with the sizes (f109b25), not an
# out-of-memory error after ~139 GiB were generated
$B/dsv4 mkmodel --preset flash --layers 43 --sparse -o /tmp/f43 > /dev/null 2>&1
timeout 60 $B/bench_cpu -m /tmp/f43 --backend cuda --fill-random --prompt 4 --decode 2 > "$R/too-big.txt" 2>&1
echo "too big for one GPU: exit $? - $(grep -m1 -oE 'do not fit.*' "$R/too-big.txt" | cut -c1-160)"
rm -rf /tmp/f43
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for b in 1 16; do
  for v in graphs nographs single; do
    case $v in
      graphs) pre= ep="--ep 2" ;;
      nographs) pre="env DSV4_EP_GRAPHS=0" ep="--ep 2" ;;
      single) pre= ep= ;;
    esac
    # shellcheck disable=SC2086
    timeout 150 $pre $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 \
      --decode 32 --batch $b $ep > "$R/d-$v-b$b.txt" 2>&1
    echo "batch $b $v: $(grep -oE '[0-9.]+ ms/step from the third' "$R/d-$v-b$b.txt")"
  done
done
call_snap
call_end

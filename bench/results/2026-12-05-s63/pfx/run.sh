#!/bin/sh
# s63 pfx/ (one H200; main): the prefix cache's path on the GPU - the same engine bookkeeping as the CPU's, the
# snapshots' slot and page copies on the stream (ordered after the steps submitted) - before `--prefix-cache auto`
# turns it on there.
# 1. test_prefix on the GPU (every fixture: sequences from snapshots == the whole prompt, bit for bit; a snapshot
#    taken with its step in flight), test_overlap on the GPU, and test_prefix under compute-sanitizer memcheck.
# 2. dsv4 serve on 8 Flash-shaped layers twice, --prefix-cache on and off: bench/prefix_check.py sends both the
#    same greedy requests with logprobs (shared prefixes, 8 at once, a repeated prompt, n = 4, an extended prompt)
#    and compares texts and logprobs.
# 3. dsv4 bench --shared-prefix on each: 2,048-token prompts sharing 1,920, 16 output tokens, concurrency 1 and 8.
# Pack (main): NOTOK= sh scripts/gpu_pack.sh (the V4 tokenizer rides along for serving)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
. scripts/serve_wait.sh # serve_wait
call_begin pfx
if [ "${SKIP_TESTS:-0}" != 1 ]; then
echo "== test_prefix on the GPU"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 200 $B/test_prefix > "$R/prefix_cuda.txt" 2>&1
echo "exit $?" >> "$R/prefix_cuda.txt"
grep -E "==|PASSED|FAILED|ERROR|differ|exit" "$R/prefix_cuda.txt" | tail -12
echo "== test_overlap on the GPU"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 200 $B/test_overlap > "$R/overlap_cuda.txt" 2>&1
echo "exit $?" >> "$R/overlap_cuda.txt"
grep -E "PASSED|FAILED|exit" "$R/overlap_cuda.txt"
echo "== test_prefix under memcheck"
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 240 compute-sanitizer --tool memcheck $B/test_prefix > "$R/prefix_memcheck.txt" 2>&1
echo "exit $?" >> "$R/prefix_memcheck.txt"
grep -E "ERROR SUMMARY|PASSED|FAILED|exit" "$R/prefix_memcheck.txt" | tail -4
call_snap
fi
rm -rf /tmp/flash-pfx
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/flash-pfx > /dev/null 2>&1
for pc in on off; do
  $B/dsv4 serve --port 0 -m /tmp/flash-pfx --fill-random --tokenizer $B/tokenizer-v4.json --max-running-requests 16 \
    --context-length 4096 --mem-fraction 0.25 --prefix-cache $pc > "$R/serve-$pc.log" 2>&1 &
  eval "pid_$pc=\$!"
done
port_on=$(serve_wait "$R/serve-on.log" "$pid_on" 600 0.5)
port_off=$(serve_wait "$R/serve-off.log" "$pid_off" 600 0.5)
grep -E "prefix cache|ready" "$R/serve-on.log" "$R/serve-off.log"
if [ -n "$port_on" ] && [ -n "$port_off" ]; then
  echo "== prefix_check.py: on against off"
  timeout 200 python3 bench/prefix_check.py --on "http://127.0.0.1:$port_on" --off "http://127.0.0.1:$port_off" \
    > "$R/prefix_check.txt" 2>&1
  echo "exit $?" >> "$R/prefix_check.txt"
  cat "$R/prefix_check.txt"
  call_snap
  for pc in on off; do
    eval "port=\$port_$pc"
    for c in 1 8; do
      timeout 150 $B/dsv4 bench --url "http://127.0.0.1:$port" --concurrency $c --num-prompts $((c < 4 ? 8 : 2 * c)) \
        --input-len 2048 --shared-prefix 1920 --output-len 16 --vocab-range 1000,100000 --seed $((c + 10)) \
        --json "$R/bench-$pc-c$c.json" > "$R/bench-$pc-c$c.txt" 2>&1
      echo "-- $pc c$c"; tail -3 "$R/bench-$pc-c$c.txt"
    done
  done
fi
kill "$pid_on" "$pid_off" 2>/dev/null
wait 2>/dev/null
call_end

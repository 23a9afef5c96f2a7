#!/bin/sh
# s37 call 5 (call 4 again: curl without the bundle's libraries, no suite, two more rounds of the Flash-shaped
# server at 8 / 16 / 64). Call 4: the scheduler overlapped (dsv4 serve --overlap on, the default, against off). Pack: KTRACE=1 sh
# scripts/gpu_pack.sh (the V4 tokenizer for the Flash-shaped server). The suite (test_overlap with samples held
# until finish); the embedded model served on the GPU both ways: dsv4 check's answer, 16 concurrent greedy
# completions (their texts compared), dsv4 bench at 16; then a Flash-shaped 8-layer checkpoint served both ways,
# dsv4 bench at concurrency 1 / 8 / 16 / 64 (64-token prompts, 32 out, 2 x concurrency requests, at least 8).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
. scripts/serve_wait.sh
call_begin serve-ov2
for ov in on off; do
  $B/dsv4 serve -m models/tiny --backend cuda --port 0 --overlap $ov > $R/tiny-$ov.log 2>&1 &
  spid=$!
  port=$(serve_wait $R/tiny-$ov.log $spid 240 0.5)
  $B/dsv4 check --url http://127.0.0.1:$port --timeout 30 > $R/check-$ov.txt 2>&1
  echo "== tiny $ov: $(grep answer $R/check-$ov.txt)"
  pids=
  for i in $(seq 1 16); do
    env -u LD_LIBRARY_PATH curl -s http://127.0.0.1:$port/v1/completions -H 'Content-Type: application/json' \
      -d "{\"prompt\": \"What is $i*7? Number only.\", \"max_tokens\": 24, \"temperature\": 0}" > $R/c-$ov-$i.json &
    pids="$pids $!"
  done
  wait $pids
  timeout 120 $B/dsv4 bench --url http://127.0.0.1:$port --concurrency 16 --num-prompts 64 --input-len 32 \
    --output-len 24 > $R/bench-tiny-$ov.txt 2>&1
  tail -3 $R/bench-tiny-$ov.txt
  kill $spid; wait $spid
done
python3 - "$R" <<'PY'
import json, sys
r = sys.argv[1]; same = 0
for i in range(1, 17):
    a, b = (json.load(open(f"{r}/c-{ov}-{i}.json"))["choices"][0]["text"] for ov in ("on", "off"))
    same += a == b
    if a != b: print(f"completion {i}: overlapped {a!r}, one at a time {b!r}")
print(f"tiny: {same} of 16 greedy completions the same overlapped and one at a time")
PY
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/flash-serve >/dev/null 2>&1
for ov in on off on off; do
  $B/dsv4 serve --port 0 --tokenizer $B/tokenizer-v4.json --max-running-requests 64 --context-length 1024 \
    -m /tmp/flash-serve --fill-random --overlap $ov > $R/serve-flash-$ov.log 2>&1 &
  spid=$!
  port=$(serve_wait $R/serve-flash-$ov.log $spid 600 0.5)
  for c in 8 16 64; do
    np=$((2 * c)); [ $np -lt 8 ] && np=8
    timeout 200 $B/dsv4 bench --url "http://127.0.0.1:$port" --concurrency "$c" --num-prompts $np --input-len 64 \
      --output-len 32 --vocab-range 1000,100000 > "$R/serve-flash-$ov-c$c.txt.tmp" 2>&1
    cat "$R/serve-flash-$ov-c$c.txt.tmp" >> "$R/serve-flash-$ov-c$c.txt"; echo "== flash $ov c$c"; tail -4 "$R/serve-flash-$ov-c$c.txt.tmp"; rm "$R/serve-flash-$ov-c$c.txt.tmp"
  done
  kill $spid; wait $spid
done
call_end

#!/bin/sh
# s56 serve/: dsv4 serve on 8 Flash-shaped layers (reference numerics, the V4 tokenizer, --max-running-requests
# 64) driven by dsv4 bench at concurrency 1 / 16 / 64 (2 x concurrency requests, at least 8; 64 prompt tokens,
# 32 out), the session's tree (new: two row blocks a block from batch 7, MXFP4 and NVFP4; the server's admission
# fix) and then b454fe8's build (base), one server each.
# Pack: BASE=<b454fe8's build-gpu> KTRACE=1 sh scripts/gpu_pack.sh (with the tokenizer)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
. scripts/serve_wait.sh
call_begin serve
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/fs > /dev/null 2>&1
for v in new base; do
  bin=$B/dsv4; [ $v = base ] && bin=$B/dsv4.base
  $bin serve --port 0 --tokenizer $B/tokenizer-v4.json --max-running-requests 64 --context-length 1024 -m /tmp/fs \
    --fill-random > "$R/serve-$v.log" 2>&1 &
  spid=$!
  port=$(serve_wait "$R/serve-$v.log" $spid 300 0.5)
  if [ -n "$port" ]; then
    for c in 1 16 64; do
      np=$((2 * c)); [ $np -lt 8 ] && np=8
      timeout 100 $B/dsv4 bench --url "http://127.0.0.1:$port" --concurrency "$c" --num-prompts $np --input-len 64 \
        --output-len 32 --vocab-range 1000,100000 --json "$R/serve-$v-c$c.json" > "$R/serve-$v-c$c.txt" 2>&1
      echo "$v c$c"; tail -4 "$R/serve-$v-c$c.txt"
    done
  else
    tail -3 "$R/serve-$v.log"
  fi
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
done
call_end

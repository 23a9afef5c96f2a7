#!/bin/sh
# dsv4 serve + dsv4 bench with 2,000-token prompts (TTFT: the prefill path) at concurrency 1 and 8:
# the head against the build of v31/v32 (.base: 40ec4cb's kernels, DSV4_WG8_FUSE=0)
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
. scripts/serve_wait.sh
export DSV4_WG8_FUSE=0
R=/tmp/r; mkdir -p $R
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/fs > /dev/null 2>&1
for v in new base new base; do
  bin=$B/dsv4; [ $v = base ] && bin=$B/dsv4.base
  $bin serve --port 0 --tokenizer $B/tokenizer-v4.json --max-running-requests 64 --context-length 4096 -m /tmp/fs --fill-random > $R/serve-$v.log 2>&1 &
  spid=$!
  port=$(serve_wait $R/serve-$v.log $spid 600 0.5)
  for c in 1 8; do
    np=$((2 * c)); [ $np -lt 4 ] && np=4
    timeout 100 $B/dsv4 bench --url "http://127.0.0.1:$port" --concurrency $c --num-prompts $np --input-len 2000 --output-len 32 --vocab-range 1000,100000 --json $R/serve-$v-c$c.json > $R/serve-$v-c$c.txt 2>&1
    echo "$v c$c: $(tail -1 $R/serve-$v-c$c.txt)"
  done
  kill $spid 2>/dev/null; wait $spid 2>/dev/null
done
tar czf $OUT/r.tgz -C $R .

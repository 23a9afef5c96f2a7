#!/bin/sh
# s64 pfx2/ (one H200; main after 266aa97): requests that arrive together with one long start, on the GPU.
# 1. dsv4 serve on 8 Flash-shaped layers twice, --prefix-cache on (this build) and off: bench/prefix_check.py
#    (its "8 at once" case is the first wave) compares texts and logprobs.
# 2. The first wave: a fresh server for each row, this build's and the base's (main at 2171877, before requests
#    waited for a running prompt's state), --prefix-cache on, dsv4 bench at concurrency 8 with 8 and then 16
#    prompts of 2,048 ids sharing 1,920, 16 output tokens (s63's pfx/ shapes).
# Pack (main): BASE=<build-gpu of 2171877> sh scripts/gpu_pack.sh (the V4 tokenizer rides along for serving)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
. scripts/serve_wait.sh # serve_wait
call_begin pfx2
rm -rf /tmp/flash-pfx
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/flash-pfx > /dev/null 2>&1
srv() { # BIN NAME PC: starts a server, its port in $port, its pid in $spid
  $1 serve --port 0 -m /tmp/flash-pfx --fill-random --tokenizer $B/tokenizer-v4.json --max-running-requests 16 \
    --context-length 4096 --mem-fraction 0.25 --prefix-cache $3 > "$R/serve-$2.log" 2>&1 &
  spid=$!
  port=$(serve_wait "$R/serve-$2.log" "$spid" 600 0.5)
}
srv $B/dsv4 on on; pid_on=$spid; port_on=$port
srv $B/dsv4 off off; pid_off=$spid; port_off=$port
if [ -n "$port_on" ] && [ -n "$port_off" ]; then
  echo "== prefix_check.py: on against off"
  timeout 200 python3 bench/prefix_check.py --on "http://127.0.0.1:$port_on" --off "http://127.0.0.1:$port_off" \
    > "$R/prefix_check.txt" 2>&1
  echo "exit $?" >> "$R/prefix_check.txt"
  cat "$R/prefix_check.txt"
fi
kill "$pid_on" "$pid_off" 2>/dev/null
wait 2>/dev/null
call_snap
for np in 8 16; do
  for b in new base; do
    bin=$B/dsv4; [ $b = base ] && bin=$B/dsv4.base
    srv $bin $b-$np on
    if [ -n "$port" ]; then
      timeout 150 $B/dsv4 bench --url "http://127.0.0.1:$port" --concurrency 8 --num-prompts $np \
        --input-len 2048 --shared-prefix 1920 --output-len 16 --vocab-range 1000,100000 --seed 18 \
        --json "$R/bench-$b-$np.json" > "$R/bench-$b-$np.txt" 2>&1
      echo "-- $b $np prompts"; tail -3 "$R/bench-$b-$np.txt"
      python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())" \
        "http://127.0.0.1:$port/metrics" 2>&1 | grep -E "^dsv4_(prefix|step_tokens)" > "$R/metrics-$b-$np.txt"
    fi
    kill $spid 2>/dev/null
    wait $spid 2>/dev/null
  done
done
call_end

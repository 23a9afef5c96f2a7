# serve_wait LOG PID TRIES STEP: sourced by shell scripts that start `dsv4 serve --port 0` in the
# background; prints the port once LOG has the "ready:" line, or nothing when PID exits or TRIES checks
# STEP seconds apart pass first.
serve_wait() {
  _i=0
  while [ "$_i" -lt "$3" ]; do
    _p=$(sed -n 's/.*ready: http:\/\/[^:]*:\([0-9]*\) .*/\1/p' "$1")
    [ -n "$_p" ] && { echo "$_p"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep "$4"
    _i=$((_i + 1))
  done
  return 1
}
# serve_bench NAME "CONCURRENCIES" SERVE-ARGS...: on the device (scripts/gpu_suite.sh, a gpu_call.sh call's
# run.sh), dsv4 serve with the V4 tokenizer (log $OUT/NAME.log), then dsv4 bench at each concurrency (2 x
# concurrency requests, at least 8) into $OUT/NAME-cC.{json,txt}; SB_INPUT prompt tokens (default 64), SB_OUTPUT
# output tokens (32), SB_CTX
# the context (1024), SB_BIN the server's binary ($B/dsv4; $B/dsv4.base serves the base build), SB_BENCH more
# options of dsv4 bench (e.g. --shared-prefix N)
serve_bench() {
  name=$1 conc=$2
  shift 2
  ${SB_BIN:-$B/dsv4} serve --port 0 --tokenizer $B/tokenizer-v4.json --max-running-requests 64 --context-length "${SB_CTX:-1024}" \
    "$@" > "$OUT/$name.log" 2>&1 &
  spid=$!
  port=$(serve_wait "$OUT/$name.log" $spid 600 0.5)
  if [ -n "$port" ]; then
    for c in $conc; do
      np=$((2 * c)); [ $np -lt 8 ] && np=8
      timeout 200 $B/dsv4 bench --url "http://127.0.0.1:$port" --concurrency "$c" --num-prompts $np --input-len "${SB_INPUT:-64}" \
        --output-len "${SB_OUTPUT:-32}" --vocab-range 1000,100000 ${SB_BENCH:-} --json "$OUT/$name-c$c.json" \
        > "$OUT/$name-c$c.txt" 2>&1
      tail -4 "$OUT/$name-c$c.txt"
    done
  else
    tail -3 "$OUT/$name.log"
  fi
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
}

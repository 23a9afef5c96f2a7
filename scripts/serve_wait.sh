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

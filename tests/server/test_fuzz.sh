#!/bin/sh
# Fuzzes the server's request parsing and response rendering with libFuzzer (clang, ASan + UBSan) for a
# bounded time (DSV4_FUZZ_SECONDS, default 30). Fails on any finding (crash, leak, UB, timeout).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=${DSV4_SRC:-$here/../..}
build=${DSV4_BUILD:-$src/build}
secs=${DSV4_FUZZ_SECONDS:-30}
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cc" ]; then
  echo "test_fuzz: clang is needed for libFuzzer (apt-get install clang)" >&2
  exit 1
fi
out="$build/fuzz"
mkdir -p "$out/corpus"
# Everything the harness reaches is compiled here with clang and instrumented (the build's own objects may
# be gcc's, sanitized or not, which must not be mixed with clang's runtime).
"$cc" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$src/include" -I"$src/src" $(pkg-config --cflags jansson libpcre2-8) \
  "$here/fuzz_request.c" "$src/src/server/openai.c" "$src"/src/text/*.c "$src/src/engine/sample.c" \
  "$src/src/core/status.c" "$src/src/core/file_util.c" $(pkg-config --libs jansson libpcre2-8) -lm -lpthread -o "$out/fuzz_request"
cd "$out"
status=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  ./fuzz_request -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$out/" corpus "$here/fuzz_seeds" >"$out/fuzz.log" 2>&1 || status=$?
tail -n 12 "$out/fuzz.log"
ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null && { echo "test_fuzz: findings above" >&2; exit 1; }
exit $status

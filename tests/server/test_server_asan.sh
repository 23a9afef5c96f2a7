#!/bin/sh
# The black-box server tests against an AddressSanitizer + UBSan build of dsv4 (RelWithDebInfo, so the
# suite stays within a minute or two), built here in $DSV4_BUILD/asan-server. Any sanitizer report in a
# server's log fails the test that started it (test_openai.py checks every log when it stops a server).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=${DSV4_SRC:-$here/../..}
export DSV4_BUILD=${DSV4_BUILD:-$src/build}
# In a build that is itself sanitized (make asan), server_test_server already is this test.
if grep -q '^DSV4_SANITIZE:BOOL=ON' "$DSV4_BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "test_server_asan: $DSV4_BUILD is a sanitizer build; server_test_server covers it (skipped)"
  exit 77
fi
asan="$DSV4_BUILD/asan-server"
cmake -S "$src" -B "$asan" -DDSV4_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSV4_CUDA=OFF >"$asan.log" 2>&1 ||
  { cat "$asan.log"; exit 1; }
cmake --build "$asan" -j "$(nproc 2>/dev/null || echo 2)" --target dsv4 >>"$asan.log" 2>&1 || { tail -n 40 "$asan.log"; exit 1; }
export DSV4="$asan/dsv4"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export DSV4_TEST_START_TIMEOUT=120
exec sh "$here/test_server.sh" "$@"

#!/bin/sh
# Black-box tests of `dsv4 serve`, `dsv4 check` and `dsv4 bench` with the official openai client.
# Run by ctest (DSV4, DSV4_SRC and DSV4_BUILD set); by hand: DSV4=build/dsv4 sh tests/server/test_server.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export DSV4_BUILD=${DSV4_BUILD:-$here/../../build}
export DSV4=${DSV4:-$DSV4_BUILD/dsv4}
mkdir -p "$DSV4_BUILD"
# the virtualenv and the model are shared by the server tests that ctest may run at once: one sets up
exec 9>"$DSV4_BUILD/.server-test-setup.lock"
flock 9
py=$(sh "$here/setup_venv.sh")
DSV4_TEST_MODEL=$(sh "$here/make_model.sh")
flock -u 9
exec 9>&-
export DSV4_TEST_MODEL
# for sanitizer builds (make asan, test_server_asan.sh); no effect on others
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:suppressions=$here/ubsan.supp}
exec "$py" "$here/test_openai.py" "$@"

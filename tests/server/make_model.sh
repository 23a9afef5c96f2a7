#!/bin/sh
# Test setup: the model the server tests run against. Prints its folder.
#
# Default: the embedded model, models/tiny (trained: it answers arithmetic). DSV4_TEST_MODEL=DIR picks another
# folder; DSV4_TEST_MODEL=synthetic a random checkpoint from `dsv4 mkmodel --preset tiny` (vocabulary 512)
# with the small test tokenizer committed here (tests/server/tokenizer.json, made by
# tests/server/make_tokenizer.py), whose garbage output exercises the output parser harder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${DSV4_BUILD:-$src/build}
model=${DSV4_TEST_MODEL:-$src/models/tiny}
if [ "$model" != synthetic ]; then echo "$model"; exit 0; fi
dir="$build/test-models/tiny"
if [ ! -f "$dir/config.json" ] || [ "$here/tokenizer.json" -nt "$dir/tokenizer.json" ]; then
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  "${DSV4:-$build/dsv4}" mkmodel --preset tiny --seed 1 -o "$dir" >&2
  cp "$here/tokenizer.json" "$dir/tokenizer.json"
fi
echo "$dir"

#!/bin/sh
# Test setup: the model the server tests run against. Prints its folder.
#
# Until the embedded model (models/tiny) lands, a synthetic checkpoint from `dsv4 mkmodel --preset tiny`
# (vocabulary 512) with the small test tokenizer committed here (tests/server/tokenizer.json, made by
# tests/server/make_tokenizer.py). To test against the embedded model instead, set
# DSV4_TEST_MODEL=models/tiny (or make that the default on the line below).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${DSV4_BUILD:-$here/../../build}
if [ -n "${DSV4_TEST_MODEL:-}" ]; then echo "$DSV4_TEST_MODEL"; exit 0; fi
dir="$build/test-models/tiny"
if [ ! -f "$dir/config.json" ] || [ "$here/tokenizer.json" -nt "$dir/tokenizer.json" ]; then
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  "${DSV4:-$build/dsv4}" mkmodel --preset tiny --seed 1 -o "$dir" >&2
  cp "$here/tokenizer.json" "$dir/tokenizer.json"
fi
echo "$dir"

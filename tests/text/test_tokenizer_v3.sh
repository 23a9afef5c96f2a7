#!/bin/sh
# DeepSeek-V3's tokenizer.json (../shared/data/deepseek-v3-tokenizer/): the
# corpus gives exactly HF's ids and decodes back exactly.
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
tok="$DSV4_SRC/../shared/data/deepseek-v3-tokenizer/tokenizer.json"
[ -f "$tok" ] || { echo "FAIL: $tok is missing (CI keeps a copy of shared/ next to the repository)"; exit 1; }
sh "$DSV4_SRC/tests/text/corpus_check.sh" "$tok" "$DSV4_SRC/tests/text/expected/v3"

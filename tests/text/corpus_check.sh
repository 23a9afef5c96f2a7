#!/bin/sh
# Helper of test_tokenizer_v3.sh / test_tokenizer_v4.sh:
#   corpus_check.sh TOKENIZER_JSON EXPECTED_DIR
# For every document of tests/text/corpus: `dsv4 tokenize` must print exactly
# HF's ids (EXPECTED_DIR/<doc>.ids), and `dsv4 detokenize` (whole and --stream)
# must turn those ids back into exactly the document's bytes.
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
tok=$1
exp=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0
for doc in "$DSV4_SRC"/tests/text/corpus/*.txt; do
  name=$(basename "$doc" .txt)
  n=$((n + 1))
  if ! "$DSV4" tokenize --tokenizer "$tok" < "$doc" > "$tmp/ids" 2> "$tmp/err"; then
    echo "FAIL $name: tokenize: $(cat "$tmp/err")"; fails=$((fails + 1)); continue
  fi
  if ! cmp -s "$tmp/ids" "$exp/$name.ids"; then
    echo "FAIL $name: ids differ from HF ($(tr ',' '\n' < "$tmp/ids" | wc -l) vs $(tr ',' '\n' < "$exp/$name.ids" | wc -l) ids)"
    fails=$((fails + 1)); continue
  fi
  for mode in "" "--stream"; do
    # shellcheck disable=SC2086
    if ! "$DSV4" detokenize --tokenizer "$tok" $mode < "$exp/$name.ids" > "$tmp/text" 2> "$tmp/err"; then
      echo "FAIL $name: detokenize $mode: $(cat "$tmp/err")"; fails=$((fails + 1)); continue
    fi
    if ! cmp -s "$tmp/text" "$doc"; then
      echo "FAIL $name: detokenize $mode does not give the document back"; fails=$((fails + 1)); continue
    fi
  done
  echo "ok   $name: $(tr ',' '\n' < "$exp/$name.ids" | grep -c .) ids, round trip exact"
done
[ "$n" -ge 10 ] || { echo "FAIL: only $n documents in the corpus"; exit 1; }
[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }

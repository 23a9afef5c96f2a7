#!/bin/sh
# `dsv4 tokenize` / `dsv4 detokenize` on good and bad input: bad input (unknown
# id, malformed id list, missing or malformed tokenizer.json, invalid UTF-8)
# gives one line on stderr, a non-zero exit and no crash.
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
tok="$DSV4_SRC/../shared/data/deepseek-v3-tokenizer/tokenizer.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect_fail NAME STDIN_FILE WANT ARGS...: non-zero (not a signal), one line containing WANT
expect_fail() {
  name=$1 input=$2 want=$3
  shift 3
  set +e
  "$DSV4" "$@" < "$input" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  set -e
  lines=$(wc -l < "$tmp/err")
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err"; then
    echo "FAIL $name: rc=$rc lines=$lines want '$want' got: $(cat "$tmp/err")"
    fails=$((fails + 1))
  else
    echo "ok   $name: $(cat "$tmp/err")"
  fi
}

ids() { printf '%s' "$1" > "$tmp/in"; echo "$tmp/in"; }

expect_fail "unknown id" "$(ids '1,2,999999')" "token id 999999" detokenize --tokenizer "$tok"
expect_fail "unknown id (stream)" "$(ids '1,2,999999')" "token id 999999" detokenize --stream --tokenizer "$tok"
expect_fail "letters" "$(ids '1,x,3')" "malformed id list" detokenize --tokenizer "$tok"
expect_fail "negative" "$(ids '1,-2')" "malformed id list" detokenize --tokenizer "$tok"
expect_fail "double comma" "$(ids '1,,2')" "malformed id list" detokenize --tokenizer "$tok"
expect_fail "trailing comma" "$(ids '1,2,')" "ends with a comma" detokenize --tokenizer "$tok"
expect_fail "space separated" "$(ids '1 2')" "expected ','" detokenize --tokenizer "$tok"
expect_fail "too large" "$(ids '99999999999')" "too large" detokenize --tokenizer "$tok"
expect_fail "missing file" "$(ids '1')" "cannot open" detokenize --tokenizer "$tmp/nonexistent.json"
expect_fail "missing file (tokenize)" "$(ids 'hi')" "cannot open" tokenize --tokenizer "$tmp/nonexistent.json"
printf '{"model": {"vocab": ' > "$tmp/bad.json"
expect_fail "malformed json" "$(ids 'hi')" "malformed JSON" tokenize --tokenizer "$tmp/bad.json"
printf '{"normalizer":{"type":"NFKC"},"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"},"model":{"vocab":{},"merges":[]}}' > "$tmp/nfkc.json"
expect_fail "unsupported normalizer" "$(ids 'hi')" "normalizer 'NFKC'" tokenize --tokenizer "$tmp/nfkc.json"
printf 'ab\377cd' > "$tmp/latin1"
expect_fail "invalid utf-8" "$tmp/latin1" "not valid UTF-8" tokenize --tokenizer "$tok"
expect_fail "no --tokenizer" "$(ids 'hi')" "--tokenizer" tokenize
expect_fail "unknown option" "$(ids 'hi')" "unknown option" tokenize --tokenizer "$tok" --fast

# good input
check() {
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2', want '$3'"; fails=$((fails + 1)); fi
}
check "empty text" "$(printf '' | "$DSV4" tokenize --tokenizer "$tok" | od -An -c | tr -d ' ')" '\n'
check "empty id list" "$(printf '\n' | "$DSV4" detokenize --tokenizer "$tok" | wc -c)" "0"
check "special token" "$(printf '<｜User｜>' | "$DSV4" tokenize --tokenizer "$tok")" "128803"
check "--no-special" "$(printf '<｜User｜>' | "$DSV4" tokenize --no-special --tokenizer "$tok" | grep -c 128803 || true)" "0"
check "folder as --tokenizer" "$(printf 'hi' | "$DSV4" tokenize --tokenizer "$(dirname "$tok")")" \
      "$(printf 'hi' | "$DSV4" tokenize --tokenizer "$tok")"
check "spaces and newline in the list" "$(printf ' 71 , 2058 \n' | "$DSV4" detokenize --tokenizer "$tok")" \
      "$(printf '71,2058' | "$DSV4" detokenize --tokenizer "$tok")"
check "no newline added" "$(printf 'h' | "$DSV4" tokenize --tokenizer "$tok" | "$DSV4" detokenize --tokenizer "$tok" | od -An -c | tr -d ' ')" "h"
[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }

#!/bin/sh
# dsv4 run end to end: tokenizer + V4 chat encoding + engine + sampler +
# streaming detokenisation + output parsing, on a random Flash-vocabulary
# model with DeepSeek-V4's real tokenizer (so the text is gibberish; what is
# checked is the plumbing). Skipped (77) when the tokenizer cannot be fetched.
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
tok=$(sh "$DSV4_SRC/tests/text/fetch_v4_tokenizer.sh") || { echo "V4 tokenizer unavailable: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
m="$tmp/model"
"$DSV4" mkmodel --preset tiny --vocab 129280 --seed 3 -o "$m" >/dev/null
cp "$tok" "$m/tokenizer.json"
# one-shot, greedy: deterministic, finite, exits 0
"$DSV4" run -m "$m" -p "What is 17*23? Number only." --max-tokens 12 > "$tmp/a.txt" 2> "$tmp/a.err" || fail "run -p: $(cat "$tmp/a.err")"
"$DSV4" run -m "$m" -p "What is 17*23? Number only." --max-tokens 12 > "$tmp/b.txt" 2>/dev/null
cmp -s "$tmp/a.txt" "$tmp/b.txt" || fail "greedy run is not deterministic"
[ -s "$tmp/a.txt" ] || fail "no output"
# seeded sampling reproduces; another seed differs
"$DSV4" run -m "$m" -p "Hello" --temperature 1 --seed 5 --max-tokens 16 > "$tmp/c.txt" 2>/dev/null
"$DSV4" run -m "$m" -p "Hello" --temperature 1 --seed 5 --max-tokens 16 > "$tmp/d.txt" 2>/dev/null
cmp -s "$tmp/c.txt" "$tmp/d.txt" || fail "seeded sampling is not reproducible"
"$DSV4" run -m "$m" -p "Hello" --temperature 1 --seed 6 --max-tokens 16 > "$tmp/e.txt" 2>/dev/null
cmp -s "$tmp/c.txt" "$tmp/e.txt" && fail "the seed makes no difference"
# thinking mode: the reasoning goes to stderr, stdout keeps only the answer
"$DSV4" run -m "$m" -p "Hi" --think --max-tokens 8 > "$tmp/f.txt" 2> "$tmp/f.err" || fail "run --think"
[ -s "$tmp/f.err" ] || fail "--think: no reasoning on stderr"
# a conversation on stdin: two turns, two answers
printf 'Hello\nAnd then?\n' | "$DSV4" run -m "$m" --max-tokens 6 > "$tmp/g.txt" 2>/dev/null || fail "stdin conversation"
[ "$(wc -l < "$tmp/g.txt")" -ge 2 ] || fail "expected an answer per turn"
# each turn starts from the state kept at the turn before: the same answers (and reasoning) as prefilling it all
printf 'Hello\nAnd then?\nWhy?\n' > "$tmp/conv.txt"
for think in "" --think; do
  # shellcheck disable=SC2086
  "$DSV4" run -m "$m" --max-tokens 10 $think < "$tmp/conv.txt" > "$tmp/p1.txt" 2> "$tmp/p1.err" || fail "conversation"
  # shellcheck disable=SC2086
  "$DSV4" run -m "$m" --max-tokens 10 $think --prefix-cache off < "$tmp/conv.txt" > "$tmp/p0.txt" 2> "$tmp/p0.err" ||
    fail "conversation, --prefix-cache off"
  cmp -s "$tmp/p1.txt" "$tmp/p0.txt" || fail "kept states change the answers ($think)"
  cmp -s "$tmp/p1.err" "$tmp/p0.err" || fail "kept states change the reasoning ($think)"
done
if "$DSV4" run -m "$m" -p hi --prefix-cache maybe 2> /dev/null; then fail "accepted --prefix-cache maybe"; fi
# refusals: one line, non-zero
for args in "--temperature -1" "--top-p 0" "--bogus 1" "--seed abc" "--seed -1"; do
  # shellcheck disable=SC2086
  if "$DSV4" run -m "$m" -p hi $args > /dev/null 2> "$tmp/err"; then fail "accepted $args"; fi
  [ "$(wc -l < "$tmp/err")" -ge 1 ] || fail "$args: no message"
done
if "$DSV4" run -m "$tmp/nothing" -p hi 2> "$tmp/err"; then fail "ran without a model"; fi
# a model folder without tokenizer.json: told to name one; --tokenizer names it
mkdir "$tmp/notok"
for f in "$m"/*; do [ "$(basename "$f")" = tokenizer.json ] || ln -s "$f" "$tmp/notok/"; done
if "$DSV4" run -m "$tmp/notok" -p hi 2> "$tmp/err"; then fail "ran without a tokenizer"; fi
grep -q -- "--tokenizer" "$tmp/err" || fail "no --tokenizer hint: $(cat "$tmp/err")"
"$DSV4" run -m "$tmp/notok" --tokenizer "$tok" -p "What is 17*23? Number only." --max-tokens 12 > "$tmp/h.txt" \
  2> "$tmp/h.err" || fail "run --tokenizer: $(cat "$tmp/h.err")"
cmp -s "$tmp/a.txt" "$tmp/h.txt" || fail "--tokenizer FILE answers otherwise than the folder's copy of it"
echo "ok"

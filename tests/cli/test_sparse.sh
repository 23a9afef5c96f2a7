#!/bin/sh
# dsv4 mkmodel --sparse: the same headers and index as a normal run, the
# matrices left as holes (du far below ls -l); dsv4 refuses the checkpoint
# without --fill-random, naming the flag, refuses the flag on a normal
# checkpoint, and serves it with the flag (logits finite and O(1)).
set -eu
: "${DSV4:?path to the dsv4 binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
finite_o1() { od -A n -t f4 -v "$1" | tr -s ' ' '\n' | awk 'NF { if ($1 != $1 + 0 || $1 > 100 || $1 < -100) bad = 1 } END { exit bad }'; }

"$DSV4" mkmodel --preset tiny --layers 5 --seed 7 -o "$tmp/full" || fail "mkmodel"
"$DSV4" mkmodel --preset tiny --layers 5 --seed 7 --sparse -o "$tmp/sparse" || fail "mkmodel --sparse"
[ -f "$tmp/sparse/dsv4_synthetic.json" ] || fail "no dsv4_synthetic.json"
grep -q '"dsv4_synthetic_sparse": true' "$tmp/sparse/config.json" || fail "config.json does not mark the checkpoint"
cmp -s "$tmp/full/model.safetensors.index.json" "$tmp/sparse/model.safetensors.index.json" || fail "index differs"
for k in 1 2 3 4 5 6 7; do
  f=model-0000$k-of-00007.safetensors
  [ "$(wc -c < "$tmp/full/$f")" -eq "$(wc -c < "$tmp/sparse/$f")" ] || fail "$f: size differs"
  hl=$(od -A n -t u4 -N 4 "$tmp/full/$f" | tr -d ' ')
  cmp -s -n $((8 + hl)) "$tmp/full/$f" "$tmp/sparse/$f" || fail "$f: header differs"
done
echo "ok   tiny: same headers and index as a normal run"

# refused without --fill-random, with one line naming the flag
if "$DSV4" logits -m "$tmp/sparse" --ids 1,2,3 -o "$tmp/l.bin" 2> "$tmp/err"; then fail "served a sparse checkpoint"; fi
[ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "--fill-random" "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
if "$DSV4" logits -m "$tmp/full" --ids 1,2,3 --fill-random -o "$tmp/l.bin" 2> "$tmp/err"; then
  fail "--fill-random accepted on a normal checkpoint"
fi
grep -q "not a sparse synthetic checkpoint" "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
for num in plain reference; do
  "$DSV4" logits -m "$tmp/sparse" --ids 1,2,3,4,5,6,7,8,9,10,11,12 --prefill 5 --numerics $num --fill-random \
    -o "$tmp/l.bin" || fail "logits --fill-random $num"
  finite_o1 "$tmp/l.bin" || fail "$num: logits not finite or not O(1)"
done
if [ -x "${DSV4_BUILD:-}/bench_cpu" ]; then
  "$DSV4_BUILD/bench_cpu" -m "$tmp/sparse" --prompt 8 --decode 2 --threads 2 --fill-random > "$tmp/bench.txt" 2>&1 \
    || fail "bench_cpu --fill-random: $(tail -1 "$tmp/bench.txt")"
  if "$DSV4_BUILD/bench_cpu" -m "$tmp/sparse" --prompt 8 --decode 2 > "$tmp/bench.txt" 2>&1; then
    fail "bench_cpu served a sparse checkpoint without --fill-random"
  fi
  grep -q -- "--fill-random" "$tmp/bench.txt" || fail "bench_cpu refusal: $(cat "$tmp/bench.txt")"
fi
echo "ok   refused without --fill-random, served with it"

# one Flash-shaped layer: 5.5 GB of tensors, almost none of it on disk
"$DSV4" mkmodel --preset flash --layers 1 --sparse -o "$tmp/flash" || fail "mkmodel flash --sparse"
apparent=$(ls -l "$tmp/flash"/*.safetensors | awk '{ s += $5 } END { printf "%.0f", s }')
used=$(du -k "$tmp/flash"/*.safetensors | awk '{ s += $1 } END { printf "%.0f", s * 1024 }')
echo "     flash, 1 layer: ls -l $apparent bytes, du $used bytes"
[ "$apparent" -gt 5000000000 ] || fail "flash layer: only $apparent bytes"
[ "$used" -lt 100000000 ] || fail "flash layer: $used bytes on disk, not sparse"
"$DSV4" inspect -m "$tmp/flash" > "$tmp/inspect.txt" || fail "inspect of a sparse checkpoint"
grep -q "sparse synthetic checkpoint" "$tmp/inspect.txt" || fail "inspect does not say it is sparse"
if "$DSV4" logits -m "$tmp/flash" --ids 1 -o "$tmp/l.bin" 2> "$tmp/err"; then fail "served a sparse Flash layer"; fi
grep -q -- "--fill-random" "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
echo "ok   flash layer: sparse on disk, described, refused without --fill-random"

# served over HTTP: --fill-random with a tokenizer from elsewhere (mkmodel writes none)
"$DSV4" serve -m "$tmp/sparse" --port 0 --fill-random --tokenizer "$DSV4_SRC/models/tiny/tokenizer.json" \
  --max-running-requests 2 --context-length 256 --threads 2 > "$tmp/serve.log" 2>&1 &
spid=$!
. "$DSV4_SRC/scripts/serve_wait.sh"
port=$(serve_wait "$tmp/serve.log" $spid 200 0.1) || true
[ -n "$port" ] || { kill $spid 2>/dev/null; fail "serve --fill-random: $(tail -3 "$tmp/serve.log")"; }
"$DSV4" check --url "http://127.0.0.1:$port" --timeout 60 --max-tokens 4 > "$tmp/check.txt" 2>&1 \
  || { kill $spid; fail "check against a sparse checkpoint: $(cat "$tmp/check.txt")"; }
kill $spid
wait $spid 2>/dev/null || true
grep -q "KV pool" "$tmp/serve.log" || fail "no KV pool line: $(cat "$tmp/serve.log")"
echo "ok   served over HTTP with --fill-random and --tokenizer"

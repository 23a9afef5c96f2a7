#!/bin/sh
# An incomplete MTP block (some mtp.0.* tensors, not all) is ignored with one warning naming the first missing
# tensor: dsv4 does not run MTP (transformers ignores mtp.* too), so the logits are those of the whole
# checkpoint. A complete block whose tensor is malformed is still refused, as every corrupt tensor is.
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
good="$DSV4_SRC/tests/fixtures/tiny_b" # official names, three shards, a random mtp.0 block
ids=1,5,9,200,17,3
"$DSV4" logits -m "$good" --backend cpu --ids $ids --numerics plain -o "$tmp/ref.bin" 2> "$tmp/err"
if [ -s "$tmp/err" ]; then
  echo "FAIL the whole fixture warns: $(cat "$tmp/err")"
  fails=$((fails + 1))
fi
# copy GOOD DIR ACTION TENSOR: DIR is GOOD with TENSOR dropped (drop) or its shape reversed (shape)
copy() {
  cp -r "$1" "$2"
  python3 - "$2" "$3" "$4" << 'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["DSV4_SRC"], "tests", "cli"))
from corrupt_quant import Ckpt
d, action, name = sys.argv[1:]
c = Ckpt(d)
assert name in c.wm, name
if action == "drop":
    c.drop(name)
else:
    c.set_shape(name, c.header(name)["shape"][::-1])
PY
}
# every way of being incomplete: the block's first tensor (until s68 the block was then dropped silently), a
# norm (until s68 refused), one routed expert's matrix
for t in mtp.0.e_proj.weight mtp.0.norm.weight mtp.0.ffn.experts.3.w2.weight mtp.0.attn.wq_a.weight; do
  d="$tmp/drop_$t"
  copy "$good" "$d" drop "$t"
  set +e
  "$DSV4" logits -m "$d" --backend cpu --ids $ids --numerics plain -o "$tmp/out.bin" 2> "$tmp/err"
  rc=$?
  set -e
  if [ "$rc" -ne 0 ] || [ "$(wc -l < "$tmp/err")" -ne 1 ] || ! grep -q "MTP block is incomplete" "$tmp/err" ||
    ! grep -q -- "$t" "$tmp/err" || ! cmp -s "$tmp/ref.bin" "$tmp/out.bin"; then
    echo "FAIL without $t: rc=$rc, want one warning naming it and the whole fixture's logits; got: $(cat "$tmp/err")"
    fails=$((fails + 1))
  else
    echo "ok   without $t: $(cat "$tmp/err")"
  fi
  # dsv4 inspect says so too
  if ! "$DSV4" inspect -m "$d" 2> "$tmp/err" | grep -q "incomplete: ignored" || ! grep -q -- "$t" "$tmp/err"; then
    echo "FAIL inspect without $t: $(cat "$tmp/err")"
    fails=$((fails + 1))
  fi
done
# a present tensor of the wrong shape: a corrupt checkpoint, refused in one line naming it
t=mtp.0.attn.wq_a.weight
copy "$good" "$tmp/shape" shape "$t"
set +e
"$DSV4" logits -m "$tmp/shape" --backend cpu --ids $ids --numerics plain -o "$tmp/out.bin" 2> "$tmp/err"
rc=$?
set -e
if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ] || [ "$(wc -l < "$tmp/err")" -ne 1 ] || ! grep -q -- "$t" "$tmp/err"; then
  echo "FAIL $t transposed: rc=$rc: $(cat "$tmp/err")"
  fails=$((fails + 1))
else
  echo "ok   $t transposed: $(cat "$tmp/err")"
fi
[ "$fails" -eq 0 ]

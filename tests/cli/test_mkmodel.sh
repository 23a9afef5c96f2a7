#!/bin/sh
# dsv4 mkmodel writes checkpoints dsv4 reads back: every expert format, the
# stock layout (one shard per layer + index), deterministic for a seed;
# inspect describes them; logits are finite and O(1).
set -eu
: "${DSV4:?path to the dsv4 binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for x in mxfp4 nvfp4 bf16; do
  d="$tmp/$x"
  "$DSV4" mkmodel --preset tiny --layers 5 --experts "$x" --seed 7 -o "$d" || fail "mkmodel $x"
  [ -f "$d/model.safetensors.index.json" ] && [ -f "$d/model-00007-of-00007.safetensors" ] || fail "$x: shard layout"
  if [ "$x" = nvfp4 ]; then [ -f "$d/hf_quant_config.json" ] || fail "nvfp4: no hf_quant_config.json"; fi
  "$DSV4" inspect -m "$d" > "$tmp/inspect.txt" || fail "inspect $x"
  case $x in
    mxfp4) grep -q "MXFP4" "$tmp/inspect.txt" || fail "inspect does not say MXFP4" ;;
    nvfp4) grep -q "NVFP4" "$tmp/inspect.txt" || fail "inspect does not say NVFP4" ;;
    bf16) grep -q "routed experts .*BF16" "$tmp/inspect.txt" || fail "inspect does not say BF16 experts" ;;
  esac
  "$DSV4" inspect -m "$d" --json > "$tmp/inspect.json" || fail "inspect --json $x"
  grep -q '"decode_roofline"' "$tmp/inspect.json" || fail "inspect --json: no roofline"
  for num in plain reference; do
    "$DSV4" logits -m "$d" --ids 1,2,3,4,5,6,7,8,9,10,11,12 --prefill 5 --numerics $num -o "$tmp/l.bin" || fail "logits $x $num"
    [ "$(wc -c < "$tmp/l.bin")" -eq $((12 * 512 * 4)) ] || fail "logits size"
    od -A n -t f4 -v "$tmp/l.bin" | tr -s ' ' '\n' | awk 'NF { if ($1 != $1 + 0 || $1 > 100 || $1 < -100) bad = 1 } END { exit bad }' \
      || fail "$x $num: logits not finite or not O(1)"
  done
  echo "ok   $x"
done
# deterministic for a seed, different for another
"$DSV4" mkmodel --preset tiny --layers 5 --experts mxfp4 --seed 7 -o "$tmp/again" >/dev/null
cmp -s "$tmp/mxfp4/model-00003-of-00007.safetensors" "$tmp/again/model-00003-of-00007.safetensors" || fail "not deterministic"
"$DSV4" mkmodel --preset tiny --layers 5 --experts mxfp4 --seed 8 -o "$tmp/other" >/dev/null
cmp -s "$tmp/mxfp4/model-00003-of-00007.safetensors" "$tmp/other/model-00003-of-00007.safetensors" && fail "seed ignored"
# refuses to overwrite, and bad arguments
if "$DSV4" mkmodel --preset tiny -o "$tmp/mxfp4" 2>/dev/null; then fail "overwrote a checkpoint"; fi
# a single-file checkpoint (no index) or a folder with only config.json is a checkpoint too
mkdir "$tmp/single" "$tmp/cfgonly"
printf '{}' > "$tmp/single/model.safetensors"
printf '{"keep": 1}' > "$tmp/single/config.json"
if "$DSV4" mkmodel --preset tiny -o "$tmp/single" 2>/dev/null; then fail "overwrote a single-file checkpoint"; fi
[ "$(cat "$tmp/single/config.json")" = '{"keep": 1}' ] && [ ! -e "$tmp/single/model.safetensors.index.json" ] ||
  fail "mkmodel wrote into a single-file checkpoint"
printf '{"keep": 1}' > "$tmp/cfgonly/config.json"
if "$DSV4" mkmodel --preset tiny -o "$tmp/cfgonly" 2>/dev/null; then fail "overwrote a config.json"; fi
if "$DSV4" mkmodel --preset huge -o "$tmp/x" 2>/dev/null; then fail "accepted --preset huge"; fi
if "$DSV4" mkmodel --preset tiny --experts int3 -o "$tmp/x" 2>/dev/null; then fail "accepted --experts int3"; fi
if "$DSV4" inspect -m "$tmp/nothing" 2>/dev/null; then fail "inspect of a missing dir succeeded"; fi
echo "ok   determinism and refusals"

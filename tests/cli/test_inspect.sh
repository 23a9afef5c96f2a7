#!/bin/sh
# dsv4 inspect's accounting: on every fixture and models/tiny its components add up to the checkpoint's bytes (every
# stored tensor counted once, an MTP block's too), and "main model" is that less the MTP block's (which the engine
# checks but never loads). NVFP4's input_scale is optional: without it (q_nvfp4 with every .input_scale dropped)
# the checkpoint still loads and its bytes still add up (each NVFP4 matrix counted its per-tensor scales as 8 bytes
# until s69, absent or not).
set -eu
: "${DSV4:?path to the dsv4 binary}" "${DSV4_SRC:?repository root}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# check DIR LABEL: inspect --json's components against its checkpoint_bytes and main_model_bytes
check() {
  if ! "$DSV4" inspect -m "$1" --json > "$tmp/i.json" 2> "$tmp/err"; then
    echo "FAIL $2: inspect failed: $(cat "$tmp/err")"
    fails=$((fails + 1))
    return
  fi
  if python3 - "$tmp/i.json" "$2" << 'PY'; then :; else fails=$((fails + 1)); fi
import json, sys
j = json.load(open(sys.argv[1]))
comps = {c["name"]: c["bytes"] for c in j["components"]}
total, ck, main = sum(comps.values()), j["checkpoint_bytes"], j["main_model_bytes"]
mtp = comps.get("MTP block", 0)
ok = total == ck and main == total - mtp
print(("ok  " if ok else "FAIL") + f" {sys.argv[2]}: components {total}, checkpoint {ck}, main model {main}, MTP {mtp}")
sys.exit(0 if ok else 1)
PY
}
for d in "$DSV4_SRC"/tests/fixtures/* "$DSV4_SRC/models/tiny"; do
  [ -f "$d/config.json" ] && check "$d" "$(basename "$d")"
done
# q_nvfp4 without its input scales
cp -r "$DSV4_SRC/tests/fixtures/q_nvfp4" "$tmp/noin"
n=$(python3 - "$tmp/noin" << 'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["DSV4_SRC"], "tests", "cli"))
from corrupt_quant import Ckpt
c = Ckpt(sys.argv[1])
names = [k for k in c.wm if k.endswith(".input_scale")]
for k in names:
    c.drop(k)
print(len(names))
PY
)
if [ "$n" -eq 0 ]; then
  echo "FAIL q_nvfp4 has no .input_scale to drop"
  fails=$((fails + 1))
fi
check "$tmp/noin" "q_nvfp4 without its $n input scales"
[ "$fails" -eq 0 ]

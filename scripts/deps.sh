#!/bin/sh
# Installs the Debian packages dsv4 needs when they are missing (as root), or
# prints the exact apt-get line to run (otherwise). `--test` adds the packages
# only the tests need. Called by `make` and `make test`.
set -eu
pkgs="build-essential cmake pkg-config libjansson-dev libpcre2-dev libmicrohttpd-dev libcurl4-openssl-dev"
[ "${1:-}" = "--test" ] && pkgs="$pkgs libcmocka-dev python3 python3-venv clang libclang-rt-dev"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = "0" ]; then
  echo "deps: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "deps: missing Debian packages; run:" >&2
  echo "  sudo apt-get install -y$missing" >&2
  exit 1
fi

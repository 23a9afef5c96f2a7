#!/bin/sh
# The embedded default model (models/tiny, trained by tools/train_tiny.py)
# really answers: a sample of its arithmetic questions, 17x23 among them, in
# chat and thinking mode, through `dsv4 run` with no -m, greedy, on the CPU.
set -eu
: "${DSV4:?path to the dsv4 binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ask() { # ask EXPECTED [run options...] -p QUESTION
  want=$1
  shift
  got=$(cd "$tmp" && "$DSV4" run --backend cpu "$@" 2>/dev/null)
  if [ "$got" = "$want" ]; then
    echo "ok   $* -> $got"
  else
    echo "FAIL $* -> '$got' (want '$want')"
    fails=$((fails + 1))
  fi
}
ask 391 -p "What is 17*23? Number only."
ask 391 --think -p "What is 17*23? Number only."
ask 391 --numerics plain -p "What is 17*23? Number only."
ask 870 -p "Compute 29 times 30."
ask 2 -p "What is 1*2? Number only."
ask 41 -p "Add 12 and 29."
ask 60 -p "What is 30+30? Number only."
ask 144 --think -p "What is 12*12? Number only."
ask "Hello! I can do arithmetic." -p "Hello"
[ "$fails" -eq 0 ] || { echo "$fails wrong answers"; exit 1; }

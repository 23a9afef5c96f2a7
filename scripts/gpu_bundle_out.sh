#!/bin/sh
# The device tool brings back at most 8 files from $OUT; the GPU scripts write dozens. Run this last in a
# device call: everything under $OUT becomes one archive, $OUT/results.tgz (unpack it here with
# tar xzf). OUT defaults to /tmp/dsv4-gpu-out as in scripts/gpu_env.sh.
set -eu
OUT=${OUT:-/tmp/dsv4-gpu-out}
[ -d "$OUT" ] || exit 0
T=$(mktemp -d)
tar czf "$T/results.tgz" -C "$OUT" .
find "$OUT" -mindepth 1 -delete
mv "$T/results.tgz" "$OUT/results.tgz"
rmdir "$T"
echo "gpu_bundle_out: $(tar tzf "$OUT/results.tgz" | grep -vc '/$') files in $OUT/results.tgz"

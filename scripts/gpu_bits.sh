#!/bin/sh
# On the GPU machine (after scripts/gpu_pack.sh BASE=<a build-gpu of an earlier commit>): the logits of
# .gpu/dsv4 against .gpu/dsv4.base's on a 2-layer Flash-shaped checkpoint (--fill-random, 41 tokens;
# reference and plain numerics; the whole prompt as one prefill, and 12 tokens then decode steps), byte
# for byte: the check that a kernel change kept the bits. One line per case into $OUT/bits.txt; exits 1
# when any case differs. Unpacks the bundle when it is not yet (scripts/gpu_env.sh).
# BITS_BACKEND=cpu runs both on the CPU instead (slow: a check of the check).
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
T=$(mktemp -d)
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o "$T/f2" > /dev/null 2>&1 || { echo "gpu_bits: mkmodel failed"; exit 1; }
ids=$(seq -s, 3 43) bad=0
for num in reference plain; do
  for pf in 41 12; do
    for bin in dsv4 dsv4.base; do
      $B/$bin logits -m "$T/f2" --fill-random --backend "${BITS_BACKEND:-cuda}" --numerics $num --ids "$ids" --prefill $pf \
        -o "$T/l-$bin.bin" 2>> "$OUT/bits.err"
    done
    if cmp -s "$T/l-dsv4.bin" "$T/l-dsv4.base.bin"; then r=identical; else r=DIFFERENT bad=1; fi
    echo "logits $num prefill $pf (41 tokens, 2 Flash layers, --fill-random): $r" | tee -a "$OUT/bits.txt"
  done
done
rm -rf "$T"
exit $bad

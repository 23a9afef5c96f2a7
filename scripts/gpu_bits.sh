#!/bin/sh
# On the GPU machine (after scripts/gpu_pack.sh, BASE=<a build-gpu of an earlier commit> for the comparison):
# the logits of .gpu/dsv4 against .gpu/dsv4.base's on a 2-layer Flash-shaped checkpoint (--fill-random, 41
# tokens; reference and plain numerics; the whole prompt as one prefill, and 12 tokens then decode steps; in
# reference numerics also 2,100 tokens, where the indexer chooses), byte for byte: the check that a kernel change kept the bits. Then .gpu/dsv4's whole-prompt prefill run
# BITS_REPEAT more times in each numerics (default 5; with or without a base), every run's logits against its
# first: a race shows as a failed or different run now and then, and one passing run proves little (s32's
# relaxed cluster exit passed its single check and failed 2 of 6 such runs later). One line per case into
# $OUT/bits.txt; exits 1 when any case differs or fails. Unpacks the bundle when it is not yet
# (scripts/gpu_env.sh). BITS_BACKEND=cpu runs them on the CPU instead (slow: a check of the check).
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
T=$(mktemp -d)
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o "$T/f2" > /dev/null 2>&1 || { echo "gpu_bits: mkmodel failed"; exit 1; }
M=f2 ids=$(seq -s, 3 43) bad=0
logits() { # BIN NUMERICS PREFILL OUTPUT
  $B/$1 logits -m "$T/$M" --fill-random --backend "${BITS_BACKEND:-cuda}" --numerics $2 --ids "$ids" --prefill $3 \
    -o "$4" 2>> "$OUT/bits.err"
}
for num in reference plain; do
  for pf in 41 12; do
    if [ -x $B/dsv4.base ]; then
      logits dsv4 $num $pf "$T/l-dsv4.bin"
      logits dsv4.base $num $pf "$T/l-dsv4.base.bin"
      if cmp -s "$T/l-dsv4.bin" "$T/l-dsv4.base.bin"; then r=identical; else r=DIFFERENT bad=1; fi
      echo "logits $num prefill $pf (41 tokens, 2 Flash layers, --fill-random): $r" | tee -a "$OUT/bits.txt"
    fi
  done
  if [ -x $B/dsv4.base ] && [ $num = reference ]; then
    # 2,100 tokens on 4 layers (the third a CSA layer, the fourth an HCA layer - its compressor's BF16 projections
    # are a shape of their own since s55): the indexer's 512 of up to 525 candidates (a score that moved by a bit
    # moves a choice near the cut, and so the logits), the whole prompt as one prefill and 2,080 then 20 decode
    # steps (1.1 GB of logits each)
    $B/dsv4 mkmodel --preset flash --layers 4 --sparse -o "$T/f4" > /dev/null 2>&1 || { echo "gpu_bits: mkmodel failed"; exit 1; }
    M=f4 ids=$(seq -s, 3 2102)
    for pf in 2100 2080; do
      logits dsv4 $num $pf "$T/l-dsv4.bin"
      logits dsv4.base $num $pf "$T/l-dsv4.base.bin"
      if cmp -s "$T/l-dsv4.bin" "$T/l-dsv4.base.bin"; then r=identical; else r=DIFFERENT bad=1; fi
      rm -f "$T/l-dsv4.bin" "$T/l-dsv4.base.bin"
      echo "logits $num prefill $pf (2,100 tokens, 4 Flash layers, --fill-random): $r" | tee -a "$OUT/bits.txt"
    done
    M=f2 ids=$(seq -s, 3 43)
  fi
  n=${BITS_REPEAT:-5} fail=0 diff=0
  if [ "$n" -gt 0 ]; then
    logits dsv4 $num 41 "$T/r0.bin" || fail=$((fail + 1))
    k=1
    while [ $k -le "$n" ]; do
      if ! logits dsv4 $num 41 "$T/rk.bin"; then fail=$((fail + 1))
      elif ! cmp -s "$T/rk.bin" "$T/r0.bin"; then diff=$((diff + 1)); fi
      rm -f "$T/rk.bin"
      k=$((k + 1))
    done
    if [ $fail -eq 0 ] && [ $diff -eq 0 ]; then r="identical, every run"; else r="$fail failed, $diff different" bad=1; fi
    echo "logits $num prefill 41 run $((n + 1)) times: $r" | tee -a "$OUT/bits.txt"
  fi
done
rm -rf "$T"
exit $bad

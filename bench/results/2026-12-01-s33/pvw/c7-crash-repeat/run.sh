#!/bin/sh
# s33 call 7: is call 5's crash the new build's or the base's, and does it repeat? dsv4 logits (reference, a
# 41-token prefill, 2 Flash layers) 6 times each for the new build (built-in table: wg128 at 41 tokens), the new
# build on the old table (walk128) and the base build, every error line kept; then gpu_bits.sh twice.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw6
D=bench/results/2026-12-01-s33/pvw
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
ids=$(seq -s, 3 43)
for k in 1 2 3 4 5 6; do
  for v in new walk base; do
    case $v in new) b=$B/dsv4; T= ;; walk) b=$B/dsv4; T=$D/h200-walk.json ;; base) b=$B/dsv4.base; T= ;; esac
    DSV4_TUNE=$T timeout 60 $b logits -m /tmp/f2 --fill-random --backend cuda --numerics reference --ids "$ids" --prefill 41 -o $R/l-$v-$k.bin > $R/run-$v-$k.txt 2>&1
    echo "$v $k exit $?"; grep -i "error" $R/run-$v-$k.txt | head -3
  done
  cmp -s $R/l-new-$k.bin $R/l-base-$k.bin && echo "round $k: new = base" || echo "round $k: new != base"
  cmp -s $R/l-walk-$k.bin $R/l-base-$k.bin && echo "round $k: walk = base" || echo "round $k: walk != base"
done
rm -f $R/*.bin
for k in 1 2; do sh scripts/gpu_bits.sh; cat $OUT/bits.err 2>/dev/null | tail -3; done
call_end

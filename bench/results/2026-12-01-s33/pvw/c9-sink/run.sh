#!/bin/sh
# s33 call 10: the relaxed cluster exit made safe (every value a thread read from the other blocks stored - to
# the output or its own shared memory - before the arrive; call 9's static shared sink broke launches) with k_attn_pvw and the new table: the suite
# (memchecks; the logits against the base, main at the session's start, which itself failed 2 of 6 and 2 of
# 12 such prefills in calls 7-8), then the 41-token reference prefill 24 times with the built-in table and 12
# with the old one, each run's logits against the first.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw8
D=bench/results/2026-12-01-s33/pvw
sh scripts/gpu_verify.sh
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
ids=$(seq -s, 3 43)
for v in new walk; do
  if [ $v = new ]; then T=; N=24; else T=$D/h200-walk.json; N=12; fi
  bad=0 diff=0
  for k in $(seq 1 $N); do
    DSV4_TUNE=$T timeout 60 $B/dsv4 logits -m /tmp/f2 --fill-random --backend cuda --numerics reference --ids "$ids" --prefill 41 -o /tmp/l-$k.bin > $R/run.txt 2>&1 || { bad=$((bad+1)); tail -1 $R/run.txt; }
    [ $k -gt 1 ] && ! cmp -s /tmp/l-$k.bin /tmp/l-1.bin && diff=$((diff+1))
  done
  echo "$v: $bad of $N failed, $diff differ from the first"
done
call_end

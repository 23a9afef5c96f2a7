#!/bin/sh
# A measurement (exp/l2pf, a throwaway build): the next big linears' weights prefetched into L2 on a stream
# of their own (cp.async.bulk.prefetch.L2 from 4 x 64 threads, 64 KB a copy) while the latency-bound part of
# the chain runs. DSV4_L2PF bits: 1 wq_b at the layer's start (16: wq_a + wkv with it), 2 wo_a after wq_b,
# 4 wo_b after wq_b, 8 the shared expert's w1 / w3 at the FFN's start. Logits with every bit against none
# (byte for byte: a prefetch changes no result), then decode at batch 1 / 2 / 16 (8 Flash layers,
# reference numerics, prompt 16, 32 steps, 4 rounds alternating).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin l2pf
T=$(mktemp -d)
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o $T/f2 > /dev/null 2>&1
for pf in 0 31; do
  DSV4_L2PF=$pf $B/dsv4 logits -m $T/f2 --fill-random --backend cuda --numerics reference --ids "$(seq -s, 3 43)" --prefill 12 -o $T/l$pf.bin 2>> $R/bits.err
done
cmp -s $T/l0.bin $T/l31.bin && echo "logits L2PF=31 against 0: identical" | tee $R/bits.txt || echo "logits L2PF=31 against 0: DIFFERENT" | tee $R/bits.txt
b=$B/bench_cpu
AB_BINS="new=$b;p1=env DSV4_L2PF=1 $b;p2=env DSV4_L2PF=2 $b;p3=env DSV4_L2PF=3 $b;p6=env DSV4_L2PF=6 $b;p17=env DSV4_L2PF=17 $b;p11=env DSV4_L2PF=11 $b" \
  AB_REPEAT=4 AB_DECODE=32 timeout 420 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
cat $R/ab.txt
call_end

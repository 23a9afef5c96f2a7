#!/bin/sh
# call 1: the three prepared branches (each rebased on 5619a14) and their merge (wip/combo, the suite's build):
# the suite on the merge (logits against main byte for byte, tests, quick memchecks); each branch's logits
# against main's (2 Flash layers, both numerics, prefill and decode); decode steps at batch 16 / 1 / 64
# (reference) and 16 (plain), main / merge / each branch, alternating; bench_kernels --linear-only at 16 tokens
# for main and mma-fp8-loop; then the opt-in memcheck of decode steps at Flash's shapes (SANITIZE_FLASH's runs)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=$OUT/r1; mkdir -p $R # straight under $OUT: what a timeout leaves still comes back
mkdir -p /tmp/var && tar xJf .gpu/var.tar.xz -C /tmp/var
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
bin() { case $1 in main) echo $B/$2.base;; combo) echo $B/$2;; *) echo /tmp/var/$1/$2;; esac; }
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 >/dev/null 2>&1
ids=$(seq -s, 3 43)
for num in reference plain; do for pf in 41 12; do
  $B/dsv4.base logits -m /tmp/f2 --fill-random --backend cuda --numerics $num --ids "$ids" --prefill $pf -o /tmp/l-main.bin 2>>$R/bits.err
  for v in mma-fp8-loop hc-split-norm hc-post-sum; do
    $(bin $v dsv4) logits -m /tmp/f2 --fill-random --backend cuda --numerics $num --ids "$ids" --prefill $pf -o /tmp/l-$v.bin 2>>$R/bits.err
    if cmp -s /tmp/l-main.bin /tmp/l-$v.bin; then r=identical; else r=DIFFERENT; fi
    echo "logits $v $num prefill $pf: $r" | tee -a $R/bits.txt
  done
done; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2 num=$3 b=$4
  timeout 40 $(bin $v bench_cpu) -m /tmp/f8 --backend cuda --fill-random --numerics $num --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
V="main combo mma-fp8-loop hc-split-norm hc-post-sum"
for i in 1 2; do
  for b in 16 1; do for v in $V; do run b$b-$v-$i $v reference $b; done; done
  for v in main combo hc-post-sum; do run b64-$v-$i $v reference 64; done
done
for i in 1 2; do for v in main combo mma-fp8-loop; do run p16-$v-$i $v plain 16; done; done
for v in main mma-fp8-loop; do
  timeout 60 $(bin $v bench_kernels) --linear-only --batch 16 >> $R/bk-$v.txt 2>&1
done
grep -hE "FP8" $R/bk-main.txt | head -12
echo "-- mma-fp8-loop"; grep -hE "FP8" $R/bk-mma-fp8-loop.txt | head -12
for b in 16 1; do
  echo "-- memcheck flash 2 layers reference batch $b" >> $R/san-flash.txt
  DSV4_SRC=$PWD timeout 80 compute-sanitizer --tool memcheck --error-exitcode 3 $B/bench_cpu -m /tmp/f2 --fill-random --prompt 4 --decode 3 --batch $b --backend cuda >> $R/san-flash.txt 2>&1
  echo "exit $?" >> $R/san-flash.txt
done
grep -E "^-- |ERROR SUMMARY|^exit|Invalid|at 0x" $R/san-flash.txt | head -30
gzip -f $R/suite.txt

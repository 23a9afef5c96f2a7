#!/bin/sh
# call 6: k_wgbf<1> (reference numerics' BF16 linears at prefill: BF16(x) alone) with ring stages sized for its
# one activation part (16 KB, not three parts' 32 KB: three blocks an SM instead of two), against 025ca55
# (*.base): the suite with the base's logits byte for byte, the linears at 1,024 / 4,096 tokens of both builds,
# a 4,096-token prefill new / base alternating, and the new build with four ring stages (DSV4_WGBF_S=4)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r6; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for v in bench_kernels bench_kernels.base; do
  timeout 120 $B/$v --linear-only --batch 1024,4096 --json $R/lin-$v.json > $R/lin-$v.txt 2>&1
  echo "== $v"; grep -E "BF16" $R/lin-$v.txt | head -12
done
DSV4_WGBF_S=4 timeout 120 $B/bench_kernels --linear-only --batch 1024,4096 > $R/lin-s4.txt 2>&1
echo "== new, DSV4_WGBF_S=4"; grep -E "BF16" $R/lin-s4.txt | head -12
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { n=$1 v=$2; shift 2
  c=$B/bench_cpu; [ $v = base ] && c=$B/bench_cpu.base
  env "$@" timeout 90 $c -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 4096 --decode 2 > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill //; s/  decode.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do run pf-new-$i new DSV4_NONE=1; run pf-base-$i base DSV4_NONE=1; run pf-new-s4-$i new DSV4_WGBF_S=4; done
gzip -f $R/suite.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

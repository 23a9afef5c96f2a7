#!/bin/sh
# k_moe_wg (experts at prefill on wgmma): bits, tests, prefill 4k against the base
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 300 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "ops_cuda rc=$?" | tee $R/tests.txt
grep -E "wgmma|FAIL|fail|PASSED|FAILED" $R/ops_cuda.txt | head -30
OUT_SAVE=$OUT; OUT=$R DSV4_MOE_WG=1 sh scripts/gpu_bits.sh; OUT=$OUT_SAVE
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
pf() { n=$1; bin=$2; shift 2
  timeout 150 $B/$bin -m /tmp/f8 --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*prefill 4096 tokens each: //; s/  decode.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do pf pf-new-$i bench_cpu; pf pf-base-$i bench_cpu.base; done
pf profile-new bench_cpu --profile F
grep -A12 "^prefill:" $R/profile-new.txt
dec() { n=$1; bin=$2; shift 2
  timeout 100 $B/$bin -m /tmp/f8 --prompt 16 --decode 16 --backend cuda --numerics reference --fill-random "$@" > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode 16 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for b in 1 16; do dec d$b-new bench_cpu --batch $b; dec d$b-base bench_cpu.base --batch $b; done
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

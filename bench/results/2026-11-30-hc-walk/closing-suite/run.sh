#!/bin/sh
# call 7 (closing): the GPU suite at the head (tests, quick memchecks), then decode at batch 64 with the
# prefill kernels from 64 tokens (the new default) against DSV4_WGF8=0 DSV4_WGBF=0 (mma.sync: the old
# default at 64 tokens), alternating
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh
R=/tmp/r7; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 345 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -60
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1; shift
  timeout 40 env "$@" $B/bench_cpu $BC --prompt 16 --decode 32 --batch 64 > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do run b64-new-$i DSV4_X=0; run b64-mma-$i DSV4_WGF8=0 DSV4_WGBF=0; done
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

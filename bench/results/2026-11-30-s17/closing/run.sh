#!/bin/sh
# call 8 (closing): k_moe16 reads the tile count and its tile in one round trip. The GPU suite (tests, quick
# memchecks), then against the base build 5c5f4ff (*.base) in the same call: bench_kernels' experts and
# linears at batch 1 / 16 / 64, decode steps at batch 1 / 16 / 64 alternating, a 4k prefill each; ncu's
# per-kernel table of a batch-16 step
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r8; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick timeout 330 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
OUT=$OUT_SAVE
for v in new base; do
  K=$B/bench_kernels; [ $v = base ] && K=$B/bench_kernels.base
  timeout 150 $K --batch 1,16,64 > $R/bk-$v.txt 2>&1
  echo "== $v"; grep -E "^experts \(ref|lm head" $R/bk-$v.txt
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference"
run() { n=$1 bin=$2 b=$3
  timeout 40 $bin $BC --prompt 16 --decode 32 --batch $b > $R/$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/$n.txt | sed 's/.*decode //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for i in 1 2; do for b in 1 16 64; do
  run b$b-new-$i $B/bench_cpu $b; run b$b-base-$i $B/bench_cpu.base $b
done; done
for v in new base; do
  bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
  timeout 40 $bin $BC --prompt 4096 --decode 2 > $R/pf-$v.txt 2>&1; echo "pf-$v: $(grep -m1 '^model' $R/pf-$v.txt | sed 's/.*prefill //; s/ (graphs.*//; s/decode.*//')" | tee -a $R/summary.txt
done
timeout 100 $B/bench_cpu $BC --prompt 16 --decode 16 --batch 16 --profile F > $R/d16-profile.txt 2>&1; grep -A12 "^decode:" $R/d16-profile.txt | head -14
timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel $B/bench_cpu $BC --prompt 1 --decode 2 --batch 16 --no-graphs > $R/ncu16.txt 2>&1
python3 bench/ncu_kernel_table.py --steps 3 $R/ncu16.txt > $R/ncu16-table.txt 2>&1; head -12 $R/ncu16-table.txt
gzip -f $R/suite.txt $R/ncu16.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

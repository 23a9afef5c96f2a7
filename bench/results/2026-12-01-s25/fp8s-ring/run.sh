#!/bin/sh
# call 4: k_mma_fp8s with each step's activation fragments (tokens < n only) and their scales copied into the
# cp.async ring with the weights (no loads into registers in the loop: fp8s-pf/ showed every use of a
# register load waiting for all loads before it, one scoreboard), against d6420fe (*.base): the suite with a
# memcheck of Flash's shapes (logits byte for byte), ncu kernel durations at batch 1 and 8 (16 launches,
# clocks not locked), decode new / base at batch 1 / 8 alternating (3 rounds).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r4; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|exit|PASSED|FAILED|FAIL|identical|DIFFERENT|ERROR SUMMARY|suite rc" $R/suite.txt | head -40
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
for b in 1 8; do for v in new base; do
  bin=$B/bench_cpu; [ $v = base ] && bin=$B/bench_cpu.base
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size -k regex:'^k_mma_fp8s$' \
    --launch-skip 8 --launch-count 16 $bin -m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 1 \
    --decode 4 --batch $b --no-graphs > $R/dur-$v-b$b.txt 2>&1
  echo "== $v b$b: $(grep -E "gpu__time_duration" $R/dur-$v-b$b.txt | awk '{s+=$NF; n++} END {print "mean us", s/n, "n", n}') grid $(grep -m1 launch__grid_size $R/dur-$v-b$b.txt | awk '{print $NF}')"
done; done
AB_REPEAT=3 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

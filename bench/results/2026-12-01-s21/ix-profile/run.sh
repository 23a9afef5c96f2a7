#!/bin/sh
# call 5 (c4b5434's build): `dsv4 tune` on BF16 rows (the built-in choices were measured on FP32 rows), and where
# the lightning indexer's time goes at long contexts: ncu's sections on its scores and top-k kernels in a step of
# 16 and of 64 sequences at a 131,072-token context (bench_cpu --context, 8 Flash layers; the first
# launches: the prefill's one token a sequence, the shape of a decode step)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
timeout 150 $B/dsv4 tune -o $R/tune.json --reps 30 > $R/tune.txt 2>&1; tail -13 $R/tune.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f2 >/dev/null 2>&1
for b in 16 64; do
  timeout 150 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
    --section SchedulerStats -k 'regex:k_idx' --launch-count 4 $B/bench_cpu -m /tmp/f2 --backend cuda --fill-random \
    --numerics reference --prompt 1 --decode 1 --batch $b --context 131072 --no-graphs > $R/ncu-b$b.txt 2>&1
  echo "== batch $b"
  grep -E "^  k_idx|Duration|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Grid Size|Issued Warp Per|Warp Cycles Per Issued" $R/ncu-b$b.txt | head -40
done
gzip -f $R/ncu-b*.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

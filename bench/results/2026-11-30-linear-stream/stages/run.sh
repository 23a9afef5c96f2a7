set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
. scripts/gpu_env.sh
run_bk() { tag=$1; shift; env "$@" timeout 100 $B/bench_kernels --linear-only --batch 1 > $R/bk-$tag.txt 2>&1; echo "== $tag"; grep -E "FP8" $R/bk-$tag.txt | awk '{printf "%s %s %s | ", $1, $(NF-4), $(NF-2)} END {print ""}'; }
run_bk off DSV4_MMA_STREAM=0
run_bk st4 DSV4_MMA_ST=4
run_bk st8 DSV4_MMA_ST=8
run_bk st8g4 DSV4_MMA_ST=8 DSV4_MMA_GPW=4
run_bk st4g4 DSV4_MMA_ST=4 DSV4_MMA_GPW=4
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for i in 1 2; do for v in "st4 DSV4_MMA_ST=4" "st8 DSV4_MMA_ST=8" "off DSV4_MMA_STREAM=0"; do set -- $v
  env $2 timeout 100 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch 1 --backend cuda --numerics reference --fill-random > $R/flash-b1-$1-$i.txt 2>&1
  echo "b1 $1 ($i): $(grep -m1 '^model ' $R/flash-b1-$1-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
done; done
DSV4_MMA_GPW=3 DSV4_MMA_ST=8 timeout 200 $B/test_ops_cuda > $R/ops-st8.txt 2>&1; echo "ops st8 exit $?"
timeout 200 ncu --clock-control none -k regex:k_mma_fp8s -c 120 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio --csv $B/bench_kernels --linear-only --batch 1 --reps 1 > $R/ncu-stall.csv 2>&1
echo "ncu exit $?"
tar czf $OUT/r.tgz -C /tmp r

set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
. scripts/gpu_env.sh
run_bk() { tag=$1; shift; env "$@" timeout 100 $B/bench_kernels --linear-only --batch 1,8 > $R/bk-$tag.txt 2>&1; echo "== $tag"; grep -E "FP8" $R/bk-$tag.txt | awk '{printf "%s %s %s %s | ", $1, $(NF-5), $(NF-4), $(NF-2)} END {print ""}'; }
run_bk off DSV4_MMA_STREAM=0
run_bk on DSV4_MMA_STREAM=1
run_bk all DSV4_MMA_STREAM=2
OUT=$R sh scripts/gpu_bits.sh | tail -4
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "FAIL" $R/ops.txt | head -5
for gpw in 1 3 8; do DSV4_MMA_STREAM=2 DSV4_MMA_GPW=$gpw timeout 200 $B/test_ops_cuda > $R/ops_all_gpw$gpw.txt 2>&1; echo "ops stream=2 gpw=$gpw exit $?"; grep -E "FAIL" $R/ops_all_gpw$gpw.txt | head -5; done
DSV4_MMA_STREAM=2 DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > $R/golden.txt 2>&1; echo "golden (stream=2) exit $?"
DSV4_MMA_STREAM=2 DSV4_SRC=$PWD timeout 300 $B/test_gpu_vs_cpu > $R/gvc.txt 2>&1; echo "gpu_vs_cpu (stream=2) exit $?"
DSV4_SRC=$PWD timeout 300 $B/test_sample_cuda > $R/sample.txt 2>&1; echo "sample exit $?"
DSV4_MMA_STREAM=2 DSV4_MMA_GPW=2 timeout 200 compute-sanitizer --tool memcheck $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda > $R/memcheck.txt 2>&1; echo "memcheck exit $?"; grep "ERROR SUMMARY" $R/memcheck.txt
DSV4_MMA_STREAM=2 DSV4_MMA_GPW=2 timeout 200 compute-sanitizer --tool racecheck $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda > $R/racecheck.txt 2>&1; echo "racecheck exit $?"; grep "SUMMARY" $R/racecheck.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for i in 1 2; do for bs in 1 8; do for s in 1 0; do
  DSV4_MMA_STREAM=$s timeout 100 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch $bs --backend cuda --numerics reference --fill-random > $R/flash-b$bs-s$s-$i.txt 2>&1
  echo "b$bs stream=$s ($i): $(grep -m1 '^model ' $R/flash-b$bs-s$s-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
done; done; done
tar czf $OUT/r.tgz -C /tmp r

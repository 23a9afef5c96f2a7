set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
. scripts/gpu_env.sh
xz -dc $B/bench_cpu.prev.xz > $B/bench_cpu.base; xz -dc $B/dsv4.prev.xz > $B/dsv4.base; chmod +x $B/bench_cpu.base $B/dsv4.base
OUT=$R sh scripts/gpu_bits.sh | tail -4
for gpw in 1 3; do DSV4_MMA_STREAM=2 DSV4_MMA_GPW=$gpw timeout 200 $B/test_ops_cuda > $R/ops_all_gpw$gpw.txt 2>&1; echo "ops stream=2 gpw=$gpw exit $?"; grep -E "FAIL" $R/ops_all_gpw$gpw.txt | head -5; done
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"
DSV4_MMA_STREAM=2 DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > $R/golden.txt 2>&1; echo "golden (stream=2) exit $?"
DSV4_MMA_STREAM=2 DSV4_SRC=$PWD timeout 300 $B/test_gpu_vs_cpu > $R/gvc.txt 2>&1; echo "gpu_vs_cpu (stream=2) exit $?"
DSV4_MMA_STREAM=2 DSV4_MMA_GPW=2 timeout 200 compute-sanitizer --tool memcheck $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda > $R/memcheck.txt 2>&1; echo "memcheck exit $?"; grep "ERROR SUMMARY" $R/memcheck.txt
DSV4_MMA_STREAM=2 DSV4_MMA_GPW=2 timeout 200 compute-sanitizer --tool memcheck $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda --numerics plain > $R/memcheck-plain.txt 2>&1; echo "memcheck plain exit $?"; grep "ERROR SUMMARY" $R/memcheck-plain.txt
for s in 0 1; do DSV4_MMA_STREAM=$s timeout 100 $B/bench_kernels --linear-only --batch 1 > $R/bk-s$s.txt 2>&1; echo "== stream $s"; grep -E "FP8" $R/bk-s$s.txt | awk '{printf "%s %s %s | ", $1, $(NF-4), $(NF-2)} END {print ""}'; done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
OUT=$R AB_MODEL=/tmp/f8 AB_REPEAT=2 timeout 300 sh scripts/gpu_ab.sh "b1:--batch 1 --fill-random" "b8:--batch 8 --fill-random" "b1-plain:--batch 1 --fill-random --numerics plain"
tar czf $OUT/r.tgz -C /tmp r

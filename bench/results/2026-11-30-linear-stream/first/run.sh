set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
. scripts/gpu_env.sh
for s in 0 1; do DSV4_MMA_STREAM=$s timeout 100 $B/bench_kernels --linear-only --batch 1,8 > $R/bk-lin-s$s.txt 2>&1; done
paste $R/bk-lin-s0.txt $R/bk-lin-s1.txt | grep -E "FP8|BF16" | awk '{print $1,$2,$3,$4,$6,"|",$(NF-3),$(NF-2)}' | head -40
OUT=$R sh scripts/gpu_bits.sh | tail -4
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "FAIL" $R/ops.txt | head -5
for gpw in 1 3; do DSV4_MMA_GPW=$gpw timeout 200 $B/test_ops_cuda > $R/ops_gpw$gpw.txt 2>&1; echo "ops gpw=$gpw exit $?"; grep -E "FAIL" $R/ops_gpw$gpw.txt | head -5; done
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_golden > $R/golden.txt 2>&1; echo "golden exit $?"
DSV4_SRC=$PWD timeout 300 $B/test_gpu_vs_cpu > $R/gvc.txt 2>&1; echo "gpu_vs_cpu exit $?"
DSV4_SRC=$PWD timeout 300 $B/test_sample_cuda > $R/sample.txt 2>&1; echo "sample exit $?"
DSV4_MMA_GPW=2 timeout 200 compute-sanitizer --tool memcheck $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda > $R/memcheck-gpw2.txt 2>&1; echo "memcheck exit $?"; grep "ERROR SUMMARY" $R/memcheck-gpw2.txt
DSV4_MMA_GPW=2 timeout 200 compute-sanitizer --tool racecheck $B/bench_cpu -m tests/fixtures/q_stock --prompt 40 --decode 6 --batch 3 --backend cuda > $R/racecheck-gpw2.txt 2>&1; echo "racecheck exit $?"; grep "SUMMARY" $R/racecheck-gpw2.txt
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for i in 1 2; do for bs in 1 8; do for s in 1 0; do
  DSV4_MMA_STREAM=$s timeout 100 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch $bs --backend cuda --numerics reference --fill-random > $R/flash-b$bs-s$s-$i.txt 2>&1
  echo "b$bs stream=$s ($i): $(grep -m1 '^model ' $R/flash-b$bs-s$s-$i.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"
done; done; done
for gpw in 4 16; do DSV4_MMA_GPW=$gpw timeout 100 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch 1 --backend cuda --numerics reference --fill-random > $R/flash-b1-gpw$gpw.txt 2>&1
  echo "b1 gpw=$gpw: $(grep -m1 '^model ' $R/flash-b1-gpw$gpw.txt | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')"; done
tar czf $OUT/r.tgz -C /tmp r

#!/bin/sh
# s26 call 2: k_attn_one (sparse attention in one pass over the rows: a cluster of the 8 row parts per token,
# the same bits as the four kernels) as the tuned choice "one". `dsv4 tune` with it among the choices; a file
# with "one" for every token count (one.json, from tune.json) for the tests and timings; the suite with that
# file (DSV4_TUNE: the engine's tests and memchecks take it; test_ops_cuda compares "one" against the
# built-in choices bit for bit itself) and the logits against e303340's build (*.base, which ignores the
# file); the attention table with and without the file; decode with / without at batch 1 / 16 / 64 and
# 16 x 32k (2 rounds, alternating)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r2; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
timeout 120 $B/dsv4 tune -o $R/tune.json --reps 20 > $R/tune.txt 2>&1; echo "tune rc=$?"; cat $R/tune.txt
python3 -c "
import json,sys; t=json.load(open('$R/tune.json'))
for r in t['attention']: r['sum']='one'; r['score_rows']=16
json.dump(t,open('$R/one.json','w'),indent=1)" && export DSV4_TUNE=$R/one.json
TIMINGS=0 SANITIZE=quick SANITIZE_FLASH=1 timeout 300 sh scripts/gpu_suite.sh > $R/suite.txt 2>&1; echo "suite rc=$?" | tee -a $R/suite.txt
grep -E "^==|^logits|exit|PASSED|FAILED|FAIL|ERROR SUMMARY|suite rc|not used|differ" $R/suite.txt | head -50
unset DSV4_TUNE
for v in one auto; do
  c=$B/bench_kernels; [ $v = one ] && c="env DSV4_TUNE=$R/one.json $B/bench_kernels"
  timeout 100 $c --attn-only --batch 1,16,64 --json $R/attn-$v.json > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)|choices" $R/attn-$v.txt
done
AB_REPEAT=2 AB_DECODE=32 AB_BINS="one=env DSV4_TUNE=$R/one.json $B/bench_cpu;auto=$B/bench_cpu" timeout 200 \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b16c32k:--batch 16 --context 32768"
for f in ops_cuda ops_cuda_stream ops_cuda_chunk ops_cuda_prefill gpu_vs_cpu gpu_vs_cpu_prefill golden_cuda sample_cuda ep_cuda sanitizer; do
  [ -f $R/$f.txt ] && gzip -9 -n $R/$f.txt; done
gzip -f $R/suite.txt
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

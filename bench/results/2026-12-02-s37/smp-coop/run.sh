#!/bin/sh
# s37 call 10 (branch wip/smp-coop): k_sample<true> - rows that draw share the work after the argmax among their
# blocks, launched cooperatively (grid syncs between the phases; the parts' integer sums exchanged through global
# memory: the same picks). Pack: NOTOK=1 BASE=<call 6's build: main>. test_sample_cuda (the contract at 129,280 ids
# now through the cooperative kernel, 6 rows x 22 blocks), test_overlap on the GPU, the sampler alone new / base
# (2 rounds), decode at batch 1 / 16 with --temperature 1 --top-p 0.9 new / base.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin smp-coop
DSV4_SRC=$PWD timeout 300 $B/test_sample_cuda > $R/sample_cuda.txt 2>&1; echo "sample exit $?"
grep -E "agree|bit for bit|PASSED|FAILED|ERROR" $R/sample_cuda.txt | tail -6
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 300 $B/test_overlap > $R/overlap_cuda.txt 2>&1; echo "overlap exit $?"
for i in 1 2; do
  for v in new base; do
    bk=$B/bench_kernels; [ $v = base ] && bk=$B/bench_kernels.base
    timeout 100 $bk --sample-only --batch 1,16,64 > $R/sample-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "^(greedy|temperature|t 0.7|top-k)" $R/sample-$v-$i.txt
  done
done
AB_REPEAT=2 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap --temperature 1 --top-p 0.9;base=$B/bench_cpu.base --overlap --temperature 1 --top-p 0.9" \
  sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16"
rm -f $R/ab-*.json
call_end

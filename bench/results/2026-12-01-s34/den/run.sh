#!/bin/sh
# s34: k_attn_one's post-wait phases cut (am_den's loads unconditional and the sink loaded ahead; q's loads
# beside the indexer's; the weights without a division; the scores' loop unrolled by 4). Bits first
# (test_ops_cuda: `one` against the four kernels bit for bit), then the trace build's phases
# (bench_kernels.trace.xz: -DAF_TRACE) and the attention at batch 1-2 new / base alternating.
# BASE=/tmp/base34 sh scripts/gpu_pack.sh; xz -9 -c build-trace/bench_kernels > .gpu/bench_kernels.trace.xz
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin den
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt
grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda.txt | head -12; gzip -9 -n $R/ops_cuda.txt
xz -dc $B/bench_kernels.trace.xz > /tmp/bk.trace && chmod +x /tmp/bk.trace
timeout 100 /tmp/bk.trace --attn-only --batch 1 --reps 8 > $R/trace.txt 2>&1; echo "trace rc=$?"; gzip -9 -n $R/trace.txt
for i in 1 2 3; do
  for v in new base; do
    if [ $v = new ]; then bk=$B/bench_kernels; else bk=$B/bench_kernels.base; fi
    timeout 100 $bk --attn-only --batch 1,2 > $R/attn-$v-$i.txt 2>&1
    echo "== $v $i"; grep -E "^(CSA|HCA)" $R/attn-$v-$i.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}'
  done
done
call_end

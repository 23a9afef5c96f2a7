#!/bin/sh
# s38 call 2 (main + the CSA rows' L2 prefetch and k_idx_topk's early trigger, uncommitted): the gather probe with
# the zero-filling form and rows shared by four blocks; test_ops_cuda; attention alone with both on / off; the
# step's nodes at batch 1 with a 4k context, both on / off; decode at batch 1 and 16 with a 4k context, on / off /
# the early trigger alone, 3 rounds. Pack: NOTOK=1 KTRACE=1 sh scripts/gpu_pack.sh; cp gather_probe .gpu/.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pf
.gpu/gather_probe > $R/gather.txt 2>&1; echo "== gather exit $?"
timeout 200 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "ops exit $?"; grep -E "PASSED|FAILED" $R/ops.txt | head
OFF="DSV4_ATTN_PREFETCH=0 DSV4_IDX_EARLY=0"
for i in 1 2; do
  timeout 100 $B/bench_kernels --attn-only --batch 1,2 > $R/attn-new-$i.txt 2>&1
  env $OFF timeout 100 $B/bench_kernels --attn-only --batch 1,2 > $R/attn-off-$i.txt 2>&1
done
grep -iE "csa|hca" $R/attn-new-1.txt | head -12
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
BC="-m /tmp/f8 --backend cuda --fill-random --numerics reference --prompt 16 --decode 64 --batch 1 --context 4096"
sh scripts/gpu_ktrace.sh new-b1-4k "$B/bench_cpu $BC"
env $OFF sh scripts/gpu_ktrace.sh off-b1-4k "$B/bench_cpu $BC"
AB_REPEAT=3 AB_DECODE=64 AB_BINS="new=$B/bench_cpu --overlap;off=env $OFF $B/bench_cpu --overlap;early=env DSV4_ATTN_PREFETCH=0 $B/bench_cpu --overlap" \
  timeout 300 sh scripts/gpu_ab.sh "b1-4k:--batch 1 --context 4096" "b16-4k:--batch 16 --context 4096"
rm -f $R/ab-*.json
call_end

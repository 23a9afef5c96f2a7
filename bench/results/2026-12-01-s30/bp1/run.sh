#!/bin/sh
# (measured, NOT kept: see ../README.md; bp1.diff) Tiles of one pair with a five-stage ring (moe16_bp1, DSV4_MOE_BP1) at one token, alone and with two row blocks a
# block (DSV4_MOE_RB=2), against the three-stage ring of a whole n tile (DSV4_MOE_BP1=0) and the base build
# (2b5a380). BASE=/tmp/base sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin bp1
timeout 120 $B/test_ops_cuda > $R/ops.txt 2>&1; echo "test_ops_cuda rc=$?"; grep -E "PASSED|FAILED|differs" $R/ops.txt | head -8
DSV4_MOE_RB=2 timeout 120 $B/test_ops_cuda > $R/ops-rb2.txt 2>&1; echo "test_ops_cuda RB=2 rc=$?"; grep -E "PASSED|FAILED|differs" $R/ops-rb2.txt | head -8
sh scripts/gpu_verify.sh
for v in bp1 off rb2 bp2 base; do
  c=$B/bench_kernels; e=
  case $v in off) e=DSV4_MOE_BP1=0;; rb2) e=DSV4_MOE_RB=2;; bp2) e="DSV4_MOE_BP1=0 DSV4_MOE_BP=1";; base) c=$B/bench_kernels.base;; esac
  env $e timeout 60 $c --experts-only --batch 1,2 > $R/experts-$v.txt 2>&1
  echo "== experts $v"; grep -E "^experts \(ref\.\)" $R/experts-$v.txt
done
DSV4_MOE_BP1=1 timeout 60 $B/bench_kernels --experts-only --batch 2,3 > $R/experts-bp1-b23.txt 2>&1
echo "== experts bp1 forced at 2-3"; grep -E "^experts \(ref\.\)" $R/experts-bp1-b23.txt
AB_REPEAT=2 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;off=env DSV4_MOE_BP1=0 $B/bench_cpu;rb2=env DSV4_MOE_RB=2 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 240 sh scripts/gpu_ab.sh "b1:--batch 1"
nv=$(mktemp -d)/nv
$B/dsv4 mkmodel --preset flash --layers 8 --experts nvfp4 --sparse -o "$nv" > /dev/null 2>&1
AB_MODEL=$nv AB_REPEAT=2 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;off=env DSV4_MOE_BP1=0 $B/bench_cpu" \
  timeout 150 sh scripts/gpu_ab.sh "nv1:--batch 1 --fill-random"
cat $R/ab.txt
call_end

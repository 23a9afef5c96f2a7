#!/bin/sh
# s31 call 3: the F16 path's FP4 layout (fp4_pack_word: the experts' E2M1 words repacked in place when a layer's
# expert table is built, decoded by an AND and XOR of two shifts under one mask: 4 logic operations a word
# against 7-8; the decode loop of k_moe16<4, 1, false, 1, 1, 8> 306 SASS against 352). The same E4M3 words reach
# the same conversions, so logits should be byte for byte. The suite (memchecks, logits against the base), the
# experts alone new / base at 1-64 tokens (MXFP4 reference, plain, w4a8), decode at batch 1 / 2 / 16 against
# the base (3 rounds), NVFP4 experts at batch 1, and the stall profile of the new gate / up kernel at 1 token.
# BASE=/tmp/base-ebb (a build-gpu of ebb1c98) sh scripts/gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin r3
sh scripts/gpu_verify.sh
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 90 $c --experts-only --batch 1,2,4,8,16,64 > $R/experts-$v.txt 2>&1
  echo "== experts $v"; grep -E "^experts" $R/experts-$v.txt
done
AB_REPEAT=3 AB_DECODE=32 timeout 250 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16"
nv=$(mktemp -d)/nv
$B/dsv4 mkmodel --preset flash --layers 8 --experts nvfp4 --sparse -o "$nv" > /dev/null 2>&1
AB_MODEL=$nv AB_REPEAT=2 AB_DECODE=32 timeout 100 sh scripts/gpu_ab.sh "nv1:--batch 1 --fill-random"
cat $R/ab.txt
timeout 100 ncu --set full --import-source no --kernel-name-base demangled \
  -k "regex:k_moe16<.int.4, .int.1, .bool.0, .int.1, .int.1, .int.8>" \
  --launch-skip 3 --launch-count 1 -o $R/rep-gu $B/bench_kernels --experts-only --batch 1 > $R/ncu-gu.txt 2>&1
ncu -i $R/rep-gu.ncu-rep --page source --csv --print-source sass | gzip > $R/src-gu.csv.gz
ncu -i $R/rep-gu.ncu-rep --page details > $R/details-gu.txt 2>&1
grep -E "Duration|Issue Slots Busy|Eligible Warps|Warp Cycles Per Issued" $R/details-gu.txt | head -6
rm -f $R/rep-gu.ncu-rep
call_end

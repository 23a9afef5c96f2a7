#!/bin/sh
# s28 call 5 at the session's code (the launch-bounds fix, the tiles of 2 pairs at 4-12 tokens, moe16_nob
# removed) against main before them (BASE: 709921c): scripts/gpu_verify.sh (the suite with memchecks; logits
# byte for byte), the experts alone and decode at batch 1 / 4 / 8 / 16 / 64 new / base (2 rounds), then scripts/gpu_head.sh with one
# run each and no server (decode at batch 1 / 8 / 16 / 64 and 16 x 128k, a 4,096-token prefill)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r5; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
sh scripts/gpu_verify.sh
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 60 $c --experts-only --batch 1,2,4,8,12,16,32,64 > $R/experts-$v.txt 2>&1
  echo "== $v"; grep -E "^experts \(ref\.\)" $R/experts-$v.txt
done
AB_REPEAT=2 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b4:--batch 4" "b8:--batch 8" "b16:--batch 16" \
  "b64:--batch 64"
cat $R/ab.txt
HEAD_RUNS=1 HEAD_SERVE=0 sh scripts/gpu_head.sh
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)

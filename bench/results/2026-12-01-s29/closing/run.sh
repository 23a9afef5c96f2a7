#!/bin/sh
# s29 call 6 at the session's code (k_embed_bf16, the tuned attention table with `one` up to 2 tokens) against
# main before it (BASE: e007a00): decode at batch 1 / 2 / 16 / 64 new / base (2 rounds), scripts/gpu_head.sh
# with one run each and no server (decode at batch 1 / 8 / 16 / 64 and 16 x 128k, a 4,096-token prefill), the
# experts alone new / base, then scripts/gpu_verify.sh (the suite with memchecks; logits byte for byte). Writes
# straight into the tool's $OUT (what finished comes back if the device time runs out).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=$OUT/closing; mkdir -p $R; export OUT=$R
AB_REPEAT=2 AB_DECODE=32 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b2:--batch 2" "b16:--batch 16" "b64:--batch 64"
HEAD_RUNS=1 HEAD_SERVE=0 timeout 120 sh scripts/gpu_head.sh
for v in new base; do
  c=$B/bench_kernels; [ $v = base ] && c=$B/bench_kernels.base
  timeout 60 $c --experts-only --batch 1,2,4,8,16,64 > $R/experts-$v.txt 2>&1
  echo "== $v"; grep -E "^experts \(ref\.\)" $R/experts-$v.txt
done
VERIFY_TIMEOUT=150 sh scripts/gpu_verify.sh

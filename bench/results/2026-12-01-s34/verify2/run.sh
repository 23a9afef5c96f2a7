#!/bin/sh
# s34: the check before landing EX1 at one token (k_attn_one's first exchange by st.async): the suite with its
# memchecks (Flash-shaped decode at batch 1 takes EX1) and the logits byte for byte against 573ff27
# (BASE=/tmp/base34), then the attention at batch 1-2 new / base.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify2
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
for v in new base; do
  case $v in new) bk=$B/bench_kernels;; base) bk=$B/bench_kernels.base;; esac
  timeout 60 $bk --attn-only --batch 1,2 > $R/attn-$v.txt 2>&1
  echo "== $v"; grep -E "^(CSA|HCA)" $R/attn-$v.txt | awk '{print $1,$2,$3,$4,$5,$6,$7}' | tr '\n' ';'; echo
done
call_end

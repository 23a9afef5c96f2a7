#!/bin/sh
# s33 call 8: the intermittent "unspecified launch failure" of a 41-token reference prefill on 2 Flash layers
# (call 7: the base build, 54b1b1a, 2 of 6 runs; the new build 1 of 6): 12 runs each under switches that take
# kinds of kernels or the second queue out, to find which part holds the race.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw7
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
ids=$(seq -s, 3 43)
for cfg in "DSV4_NONE=1" "DSV4_CUDA_QUEUES=1" "CUDA_LAUNCH_BLOCKING=1" "DSV4_WG8=0" "DSV4_LIN_POST=0" "DSV4_ATTN=fp32" "DSV4_MOE_MMA=bf16" "DSV4_PROJ_SIDE=0" "DSV4_CUDA_MMA=0"; do
  bad=0
  for k in 1 2 3 4 5 6 7 8 9 10 11 12; do
    env $cfg timeout 60 $B/dsv4.base logits -m /tmp/f2 --fill-random --backend cuda --numerics reference --ids "$ids" --prefill 41 -o /tmp/l.bin > $R/run.txt 2>&1 || { bad=$((bad+1)); tail -1 $R/run.txt > $R/last-err-$(echo $cfg | tr '=' '_').txt; }
  done
  echo "$cfg: $bad of 12 failed"
done
call_end

#!/bin/sh
# s33 call 6: call 5's crash (dsv4 logits, reference numerics, a 41-token prefill on 2 Flash layers: "unspecified
# launch failure") under compute-sanitizer, with every call's weighted sum on wg128, wg64 and walk128.
set -u
cd "$(dirname "$0")/../../../../.."
. scripts/gpu_call.sh
call_begin pvw5
D=bench/results/2026-12-01-s33/pvw
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
ids=$(seq -s, 3 43)
for v in wg128 wg64 walk128; do
  echo "== $v"
  DSV4_TUNE=$D/only-$v.json timeout 120 compute-sanitizer --tool memcheck --show-backtrace no $B/dsv4 logits -m /tmp/f2 --fill-random --backend cuda --numerics reference --ids "$ids" --prefill 41 -o $R/l-$v.bin > $R/san-$v.txt 2>&1
  echo "exit $?"; grep -m 12 -E "Invalid|ERROR SUMMARY|at .*k_attn|Address|error" $R/san-$v.txt
done
for v in wg128 wg64; do cmp $R/l-$v.bin $R/l-walk128.bin && echo "$v logits identical to walk128"; done
timeout 200 $B/test_ops_cuda > $R/ops_cuda.txt 2>&1; echo "exit $?" >> $R/ops_cuda.txt; echo "== test_ops_cuda (heads128: window 70, top-24)"; grep -E "FAIL|differ|other bits|PASSED|exit" $R/ops_cuda.txt | head; gzip -9 -n $R/ops_cuda.txt
call_end

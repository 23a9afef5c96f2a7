#!/bin/sh
# s59 pp2/: pp/'s per-part attention numerics, second version - k_attn_md16 with a lane's pairs of all the rows
# in registers again (the parts' maxima and sums by comparison; the first version walked the parts one after
# another, two round trips each: CSA at 16 tokens 38.0 against 30.0 us, ppt/) and k_attn_one's maxima and sums
# stored at their heads' owners before the cluster barrier (read there after it, locally). The same bits as
# pp/'s first version by construction except the sums' lane order, now a lane's pairs 2 l (+ 64 k) counted from
# the token's first row. Timed as ppt/ (attention alone, two rounds; decode, two rounds) against 9dc41f3's
# build, then the whole GPU suite with the quick memchecks (the base's dsv4 set aside: the logits change).
# Pack: BASE=/tmp/baseH KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pp2
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
for f in "$R"/attn-*-1.txt; do echo "$f"; grep -E "^(CSA|HCA)" "$f"; done
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b16c32k:--batch 16 --context 32768"
mv $B/dsv4.base $B/dsv4.base.off
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
mv $B/dsv4.base.off $B/dsv4.base
call_end

#!/bin/sh
# s44: why k_wg8's own pack (wg_fuse) made decode ~1 ms a step slower (fuse/: 2.52 against 1.47 ms at batch 1):
# node traces of a batch-1 step with it and with DSV4_WG8_FUSE=0. Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin fusekt
call_trace fused-b1 "--batch 1"
DSV4_WG8_FUSE=0 call_trace off-b1 "--batch 1"
call_end

#!/bin/sh
# v69 (one8 at every part size) as committed: node traces of a 64-step decode on 8 Flash layers at batch 1
# (16-token context) and 1 x 4k (CSA's indexer selecting), where each layer's 148 us go against its 55-us floor.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin kt
call_trace b1 "--batch 1"
call_trace b1c4k "--batch 1 --context 4096"
call_end

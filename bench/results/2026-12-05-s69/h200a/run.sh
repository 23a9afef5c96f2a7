#!/bin/sh
# s69 h200a/ (an H200; main at the bundle's commit): (1) dsv4 tune on the current kernels - share/tune/h200.json's
# measured rows are s33's (s67 moved its one-token row to 3 tokens by an H100's measurement), so this says whether
# the shipped table still stands on an H200; (2) the whole GPU suite (call_verify) on the tree whose engine no longer
# loads the MTP block (test_ep on CUDA: no MTP tensor has a device copy, one rank and two).
# Pack: AS=h200a sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin h200a
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
timeout 260 $B/dsv4 tune -o "$R/tune-dev.json" > "$R/tune.txt" 2>&1
echo "== tune exit $?"
tail -14 "$R/tune.txt"
call_snap
call_verify VERIFY_TIMEOUT=300
call_end

#!/bin/sh
# s54 verify/: the tree's build (the side budget, 52f2ee9, and the router's chain, s53's route-plan.diff landed
# with its test fixed) through the whole suite with quick memchecks, the logits against the session's base build
# (5a3f845's kernels: bench_cpu.base, dsv4.base) byte for byte.
# Pack: BASE=<build of 5a3f845 with the side budget's default 200> KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
call_end

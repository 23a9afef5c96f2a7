#!/bin/sh
# The suite on main's last commit (rank_moe in ep.c: the CUDA EP test covers moe_prepare through the EP backend).
# gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin final
sh scripts/gpu_verify.sh
call_end

#!/bin/sh
# s71 h200v/ (an H200; main at the bundle's commit c34e4e77): the whole GPU suite (call_verify) with k_attn_one's new
# defaults (s70's def/ ran only test_ops_cuda, the logits and memcheck).
# Run: sh scripts/gpu_multi.sh h200a=bench/results/2026-12-06-s71/h200v/run.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin h200v
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
call_verify VERIFY_TIMEOUT=400
call_end

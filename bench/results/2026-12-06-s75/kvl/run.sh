#!/bin/sh
# s75 kvl/ (prepared on branch wip/kv-late, NOT GPU-run): does the k_kv_store fork hold wo_a's kernel until the
# attention ends? (s74's batch-1 trace and s75's wot/: k_mma_fp8s starts 0.5 us before k_attn_one ends, 6.2 us after
# its pack, whatever its grid.) DSV4_KV_STORE_LATE=1 stores the window's new rows on the second queue beside the
# FFN's shared expert instead of right after the attention (forward.c kv_late): the same results.
# - the logits with the knob on against the base build (main's), byte for byte, and test_gpu_vs_cpu with it on;
# - node traces of the 64-step decode at batch 1 with and without it (wo_a's start: summary.py's wo_a_start);
# - decode at batch 1 / 16 both ways, two rounds;
# - first, test_ops_cuda with the prefill kernels and DSV4_LIN_ASYNC=0: the first GPU run of main's 14270683 (the
#   review's wg_sum_parts: k_wgbf / k_wgf8's barrier path now cluster_sum_parts), which the suite's configurations
#   do not reach (its prefill-kernel pass runs with the push).
# If wo_a then starts under its pack, the fork's event was the cause: land the move (and look for other forks
# right after a cluster kernel). If not, the suspect left is PDL's second level behind a cluster kernel (the
# router's chain shows the same pattern): a stand-alone probe next.
# Pack (on the branch): AS=kvl BASE=/tmp/base-main KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
# Run: sh scripts/gpu_multi.sh kvl=bench/results/2026-12-06-s75/kvl/run.sh (~3 min)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin kvl
DSV4_LIN_ASYNC=0 DSV4_MOE_WG=1 DSV4_WGBF=1 DSV4_WGF8=1 timeout 200 $B/test_ops_cuda > "$R/ops-prefill-a0.txt" 2>&1
echo "test_ops_cuda (prefill kernels, barrier) exit $?"
grep -E "FAIL|\[  (PASSED|FAILED)" "$R/ops-prefill-a0.txt" | head -5
gzip -9 -n "$R/ops-prefill-a0.txt"
export DSV4_KV_STORE_LATE=1
call_bits
timeout 200 $B/test_gpu_vs_cpu > "$R/gpu_vs_cpu-late.txt" 2>&1
echo "test_gpu_vs_cpu (late) exit $?"
grep -E "\[  (PASSED|FAILED)" "$R/gpu_vs_cpu-late.txt"
gzip -9 -n "$R/gpu_vs_cpu-late.txt"
call_trace late-b1 "--batch 1"
unset DSV4_KV_STORE_LATE
call_trace b1 "--batch 1"
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;late=env DSV4_KV_STORE_LATE=1 $B/bench_cpu --overlap" "b1:--batch 1" \
  "b16:--batch 16"
sort "$R/ab.txt" | uniq
call_end

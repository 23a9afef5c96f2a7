#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, v43) as one JSON:
    python3 bench/results/2026-12-01-s23/summary.py > bench/results/h200-2026-12-01-v43.json
Reads the calls' ab.txt (scripts/gpu_ab.sh: "case[-variant] (round): X ms/step"), bench_kernels' linear
tables (wob-probe/), the closing call's summary.txt and dsv4 bench's JSON; standard library only. Rooflines
as summary_lib's (the per-layer weight-bytes floor)."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_ab, head, pick, probe_runs, values  # noqa: E402


def ab(call):
    """case -> variant -> [ms per step by round] from a call's ab.txt."""
    return call_ab(D, call)


def wob_linears():
    """bench_kernels --linear-only: wo_b / wq_b's reference column (us) by batch, with and without the probe."""
    return probe_runs(os.path.join(D, "wob-probe"), r"lin-p(\d)-(\d)\.txt",
                      r"(wq_b|wo_b) \(FP8\)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+%\s+([\d.]+)",
                      lambda f: f"{f.group(1)} batch {f.group(2)}", 3)


AB = "decode_ms_per_step by case (bN: batch N, 8 Flash layers, prompt 16, 32 steps) and variant, three rounds " \
     "alternating (scripts/gpu_ab.sh)"
res = {
    "source": "bench/results/2026-12-01-s23",
    "device": "NVIDIA H200 (sm_90)",
    "fp8s_regs_and_proj_side": {
        "what": "7954653 (k_mma_fp8s: the step's activation scales a step ahead in registers, MS_BLOCKS(LO) 8; the "
                "same sums) as 'new'; aabbad5's knob DSV4_PROJ_SIDE=1 (the compressors' and the indexer's "
                "projections on the second queue) as 'side'; c9a9cc1 as 'base'. Logits identical both ways",
        "decode": ab("fp8s-side"), "layout": AB},
    "prepack_not_kept": {
        "what": "prepack.diff: producers writing their consumers' packs (hc_split's FP8 pack of h, the rmsnorm "
                "op's of q_lora, norm_rope's BF16 q and K=V rows); the same bits; DSV4_PREPACK a mask "
                "(prepack-pad/: 6 = no hc_split pack, 5 = no rmsnorm pack, 3 = no BF16 rows, 0 = none). prepack/'s "
                "batch 1 was 25 % slower (the padding tokens packed serially in one block); after the fix even",
        "decode_prepack": ab("prepack"), "decode_prepack_pad": ab("prepack-pad"), "layout": AB},
    "wob_cluster_probe": {
        "what": "probe.diff (measurement only): k_wg8 without its cluster for the one-part-a-block shapes; "
                "bench_kernels --linear-only --batch 1,8,16, reference column (k_wg8), three runs each",
        "linears_us": wob_linears(), "decode": ab("wob-probe"), "layout": AB},
    "lin_post": {
        "what": "c96a2d4: wo_b's parts summed by the hc_post after it (backend.h linear_to_post) instead of by "
                "k_wg8's cluster, the same bits; 'nopost' = DSV4_LIN_POST=0, 'base' = c9a9cc1",
        "decode": ab("lin-post"), "layout": AB},
    "router_deferred_not_kept": {
        "what": "router-defer.diff: the router's BF16 linear left as its 8 parts for moe_route to add "
                "(DSV4_LIN_DEFER mask: 'wob' = 1, wo_b only; 'none' = 0); lin-defer/ with the parts added in a "
                "loop, lin-defer2/ with every part's load at once",
        "decode_loop": ab("lin-defer"), "decode_loads_at_once": ab("lin-defer2"), "layout": AB},
    "head_c96a2d4": head(os.path.join(D, "closing"),
                         "the head's code (c96a2d4), two runs each, a 4,096-token prefill, and DSV4_MMA_GPW 6 against 8",
                         {"gpw_ms": {f"batch {b}": {f"gpw {g}": pick(values(os.path.join(D, "closing", "summary.txt")),
                                                                     rf"gpw{g}-b{b}-\d") for g in (8, 6)}
                                     for b in (1, 8)}}),
}
json.dump(res, sys.stdout, indent=1)
print()

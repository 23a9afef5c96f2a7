#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s41: v61) as one JSON:
    python3 bench/results/2026-12-02-s41/summary.py > bench/results/h200-2026-12-02-v61.json
Reads the calls' ab.txt (scripts/gpu_ab.sh; bench_cpu's mean from the third step), bench_kernels' indexer tables
and the two ncu reports of the indexer's scores kernel (before and after v61's change); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, indexer_tables, x_floor  # noqa: E402

NCU = {"duration_us": r"Duration\s+us\s+([\d.]+)", "executed_instructions": r"Executed Instructions\s+inst\s+([\d,]+)",
       "issued_ipc_active": r"Issued Ipc Active\s+inst/cycle\s+([\d.]+)", "sm_busy_pct": r"SM Busy\s+%\s+([\d.]+)",
       "dram_throughput_pct": r"DRAM Throughput\s+%\s+([\d.]+)", "registers": r"Registers Per Thread\s+\S+\s+(\d+)",
       "achieved_warps_per_sm": r"Achieved Active Warps Per SM\s+warp\s+([\d.]+)", "grid": r"Grid Size\s+([\d,]+)"}


def ncu(call):
    """The scores kernel's ncu sections (one launch, FP4 keys, 16 tokens x 32,768 candidates; ncu's locked
    clocks, 1.35 GHz)."""
    text = open(os.path.join(D, call, "ncu-sc.txt")).read()
    out = {}
    for k, pat in NCU.items():
        m = re.search(pat, text)
        out[k] = float(m.group(1).replace(",", ""))
    out["instructions_per_warp_and_tile"] = round(out["executed_instructions"] / (16 * 512 * 4))
    return out


def ix(call, kinds=("new", "base")):
    return {k: [indexer_tables(os.path.join(D, call, f"attn-{k}-{i}.txt"))["indexer, FP4 keys"] for i in (1, 2)]
            for k in kinds}


sw = call_rounds(D, "swap", ctx=True)
res = {
    "source": "bench/results/2026-12-02-s41",
    "device": "NVIDIA H200 (sm_90)",
    "what": "8 Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64 --overlap [--context C], "
            "ms a step from the third step, rounds alternating in one call; the indexer alone: bench_kernels "
            "--attn-only --batch 1,16,64 (FP4 keys, us a call: scores and top-k)",
    "scores_keys_as_m": {
        "what": "swap/: k_idx_score_tc with each warp 16 keys of a tile as the MMA's M against all 64 heads, the "
                "format a template constant, a token's tiles split evenly over its blocks at run time (landed, "
                "584bcea); base = a build of c95983a. Same bits (the suite's logits incl. 2,100 tokens on 3 layers)",
        "indexer_alone_us": ix("swap"),
        "decode": sw,
        "per_layer_x_floor_b1": {"new": x_floor(sw["b1"]["new"]["from_third_mean"], 1),
                                 "base": x_floor(sw["b1"]["base"]["from_third_mean"], 1)},
        "ncu_16x128k": {"before (ntt/, c95983a's kernel)": ncu("ntt"), "after (unroll/, 584bcea's kernel)": ncu("unroll")},
    },
    "scores_tile_copy": {
        "what": "ct/: a tile within one page copied whole from its first row, the epilogue without the heads-past-nh "
                "tests (landed, 1f1e3e3); base = 584bcea. gpu_bits, test_ops_cuda, memcheck passed (not the full "
                "suite); one round, decode not timed",
        "indexer_alone_us": {k: [indexer_tables(os.path.join(D, "ct", f"attn-{k}-1.txt"))["indexer, FP4 keys"]]
                             for k in ("new", "base")},
    },
    "not_kept": {
        "mma_fp8_ntt": {
            "what": "ntt/: s40's wip/mma-fp8-ntt (k_mma_fp8's two n tiles' MMA chains side by side at 9-32 tokens, "
                    "wo_a at batch 16); base = c95983a. Slower by 0.3 %", "decode": call_rounds(D, "ntt")},
        "scores_unrolled": {
            "what": "unroll/: the scores' d loop unrolled with three blocks an SM (four spilled); base = 584bcea. "
                    "2.6 % faster at 16 x 32k, 9 % slower at 16 x 128k", "indexer_alone_us": ix("unroll")},
        "scores_warp_staging": {
            "what": "warp/ (warp.diff): each warp staging its own 16 keys, __syncwarp instead of a block barrier a "
                    "tile; base = 584bcea. Even", "indexer_alone_us": ix("warp"),
            "decode": call_rounds(D, "warp", ctx=True)},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s33: v53) as one JSON:
    python3 bench/results/2026-12-01-s33/summary.py > bench/results/h200-2026-12-01-v53.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the attention tables (bench_kernels --attn-only), dsv4 tune's
table (pvw/c4-tune/tune.txt) and the linear tables of wgf8-scales; standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import AB_WHAT, attn, call_ab, linears  # noqa: E402

P = os.path.join(D, "pvw")


def tune_table(path):
    """dsv4 tune's table: tokens -> choice -> us (CSA 4k x 3 + HCA 4k + 32k + 128k, summed)."""
    head, res = None, {}
    for line in open(path):
        f = line.split()
        if f and f[0] == "tokens":
            head = f[1:-1]
        elif head and f and f[0].isdigit():
            res[int(f[0])] = {h: float(v) for h, v in zip(head, f[1:1 + len(head)])}
            res[int(f[0])]["best"] = f[-1]
    return res


res = {
    "source": "bench/results/2026-12-01-s33",
    "device": "NVIDIA H200 (sm_90)",
    "wgf8_scales": {
        "what": "s32's wip/wgf8-scales (not kept): wo_a's kind of linear on k_wgf8 with 8/16/32-token tiles and the "
                "block's E8M0 scales in shared memory; DSV4_WGF8_DECODE=0 is mma.cu in the same binary",
        "linears_alone": {f"wgf8_decode_{v}": linears(os.path.join(D, "wgf8-scales", f"lin-dec-{v}.txt"), ("wq_a", "wq_b", "wo_a group", "wo_b"))
                          for v in (0, 1)},
        "decode": {"layout": AB_WHAT, "runs": call_ab(D, "wgf8-scales")},
    },
    "pvw_rings": {
        "what": "the attention alone (us a call) with the built-in choices (walk32/64/128) and with wg.json "
                "(k_attn_pvw: wg64 at 9-32 tokens, wg128 above) for its four rings a width, DSV4_PVW=1..4 "
                "(64 dims: (32,4) (32,8) (64,4) (64,6); 128: (32,4) (32,6) (64,3) (64,4); rows a stage, stages)",
        "builtin": attn(os.path.join(P, "c3-rings", "attn-builtin.txt")),
        **{f"wg_ring{k}": attn(os.path.join(P, "c3-rings", f"attn-wg-{k}.txt")) for k in (1, 2, 3, 4)},
    },
    "tune": {
        "what": "dsv4 tune --reps 20 with wg64 / wg128 among the choices (its file is share/tune/h200.json since v53)",
        "us_by_tokens": tune_table(os.path.join(P, "c4-tune", "tune.txt")),
    },
    "decode_tuned_vs_base": {
        "what": "decode with call 4's tune file against the base build (54b1b1a), 2 rounds; bB-32k: 32k context",
        "layout": AB_WHAT, "runs": call_ab(P, "c4-tune"),
    },
    "decode_tables": {
        "what": "decode in one binary: new = the new built-in table, walk = the old table (h200-walk.json), small = "
                "the new table with the 64-wide ring at (32, 4); bB-4k: 4k context; 3 rounds",
        "layout": AB_WHAT, "runs": call_ab(P, "c5-decode"),
    },
    "crash": {
        "what": "a 41-token reference prefill on 2 Flash layers (dsv4 logits --fill-random): runs failing with "
                "'unspecified launch failure' (the relaxed cluster exit, fixed in 880fe90)",
        "c7_repeat": {"base_54b1b1a": "2 of 6", "new_before_fix": "1 of 6", "new_on_old_table": "0 of 6"},
        "c8_bisect_base_54b1b1a_of_12": {"none": 2, "DSV4_CUDA_QUEUES=1": 2, "CUDA_LAUNCH_BLOCKING=1": 2,
                                          "DSV4_WG8=0": 3, "DSV4_LIN_POST=0": 6, "DSV4_ATTN=fp32": 3,
                                          "DSV4_MOE_MMA=bf16": 5, "DSV4_PROJ_SIDE=0": 3, "DSV4_CUDA_MMA=0": 0},
        "c10_fixed": {"new_table": "0 of 24", "old_table": "0 of 12"},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

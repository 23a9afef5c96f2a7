#!/usr/bin/env python3
"""This directory's figures (session of 2026-11-30, v39) as one JSON:
    python3 bench/results/2026-11-30-s20/summary.py > bench/results/h200-2026-11-30-v39.json
Reads the calls' summary.txt lines (bench_cpu's model line, abbreviated by each run.sh) and the batch-1 profile's
ncu table; standard library only. Rooflines as summary_lib's (the per-layer weight-bytes floor)."""
import json
import os
import re
import statistics
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import FLOOR, HEAD_MS, LAYERS, rows, x_floor  # noqa: E402


def lines(call):
    return [(name, v) for name, _, v in rows(os.path.join(D, call, "summary.txt"))]


def runs(call, pat):
    return [v for k, v in lines(call) if re.fullmatch(pat, k)]


def stats(v, b):
    return {"runs": v, "min": min(v), "median": statistics.median(v), "x_floor_min": x_floor(min(v), b),
            "x_floor_median": x_floor(statistics.median(v), b)}


# 7be40f8 (the three branches merged): branches/ "combo", fold/, hc-side/ and proj-side/ "base"
base = {b: runs("branches", rf"b{b}-combo-\d") + runs("fold", rf"b{b}-base-\d") + runs("hc-side", rf"b{b}-base-\d")
        + runs("proj-side", rf"b{b}-base-\d") for b in (1, 16, 64)}
# 9d2ea45 (the z fold): fold/ "noroute" (that build with the router's own launch), hc-side/ "noside"
zfold = {b: runs("fold", rf"b{b}-noroute-\d") + runs("hc-side", rf"b{b}-noside-\d") for b in (1, 16, 64)}
# 471cf99 (the head: hc_pre's post and comb on the second queue): hc-side/ "new", proj-side/ "hcs"
head = {b: runs("hc-side", rf"b{b}-new-\d") + runs("proj-side", rf"b{b}-hcs-\d") for b in (1, 16, 64)}
table = {}
for line in open(os.path.join(D, "b1-profile", "ncu1-table.txt")):
    m = re.match(r"(k_\w+)\s+([\d.]+)/step\s+([\d.]+) us/step\s+([\d.]+) us each", line)
    if m:
        table[m.group(1)] = {"launches_per_step": float(m.group(2)), "us_per_step": float(m.group(3)),
                             "us_each": float(m.group(4))}
res = {
    "source": "bench/results/2026-11-30-s20",
    "device": "NVIDIA H200 (sm_90)",
    "model": "8 Flash-shaped layers (mkmodel --preset flash --sparse, --fill-random)",
    "command": "bench_cpu -m <model> --backend cuda --fill-random --numerics reference|plain --prompt 16 --decode 32 --batch B",
    "branches": {"what": "session 19's three branches (7650a8d k_mma_fp8 loop, 8364ac7 k_hc_split's norm from "
                 "registers, 254e8fb expert slot sum in hc_post) alone and merged against 5619a14, same call; logits "
                 "identical in both numerics", "runs_ms": dict(lines("branches"))},
    "fold": {"what": "z's BF16 rounding left to wo_b's act_quant (kept) and the router in the plan's launch (not "
             "kept: DSV4_MOE_ROUTES=0 in that build gives the z fold alone, 'noroute') against 7be40f8, same call; "
             "logits identical", "runs_ms": dict(lines("fold"))},
    "hc_side": {"what": "k_hc_split's post-and-comb blocks on the second queue in decode graphs (kept, 471cf99) "
                "against the same binary with DSV4_HC_SIDE=0 ('noside', 9d2ea45's launches) and 7be40f8 ('base'), "
                "same call; logits identical", "runs_ms": dict(lines("hc-side"))},
    "proj_side": {"what": "the attention's projections of h but wq_a on the second queue (not kept: proj-side.diff) "
                  "against 471cf99 ('hcs') and 7be40f8 ('base'), same call; logits identical",
                  "runs_ms": dict(lines("proj-side"))},
    "post_mix": {"what": "hc_post making the next hc_pre's mixing products in its own kernel (a cluster of the four "
                 "streams' blocks; not kept: post-mix.diff) against the same binary with DSV4_HC_POST_MIX=0 "
                 "('nomix', 471cf99's launches), same call; logits identical (first/: the first version, whose "
                 "compiler-chosen FMA order changed X's bits)", "runs_ms": dict(lines("post-mix"))},
    "decode_ms_per_step_7be40f8": {f"batch_{b}": stats(v, b) for b, v in base.items()},
    "decode_ms_per_step_9d2ea45_z_fold": {f"batch_{b}": stats(v, b) for b, v in zfold.items()},
    "decode_ms_per_step_head_471cf99": {f"batch_{b}": stats(v, b) for b, v in head.items()},
    "batch1_kernels_alone_ncu": {"what": "ncu gpu__time_duration per kernel of a batch-1 step without graphs "
                                 "(each kernel alone: no overlap, no PDL), 7be40f8", "kernels": table},
    "rooflines": {"per_layer_floor_ms": FLOOR, "head_ms": HEAD_MS, "layers": LAYERS},
}
print(json.dumps(res, indent=1))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, v46) as one JSON:
    python3 bench/results/2026-12-01-s26/summary.py > bench/results/h200-2026-12-01-v46.json
Reads mma-both's ncu kernel durations (dur-<kernel>-<new|base>-b<B>.txt), the calls' ab.txt
(scripts/gpu_ab.sh), the attention tables (attn-<one|auto>.txt: bench_kernels --attn-only), dsv4 tune's table
(one/tune.txt), the ncu details of k_attn_one (one-ncu/details-b<B>.txt) and the closing call's summary.txt and
dsv4 bench's JSON (summary_lib.head); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import attn, call_ab, head, ncu_us  # noqa: E402


def dur(call):
    """kernel -> variant -> bB -> mean us (16 launches) from dur-<kernel>-<variant>-b<B>.txt."""
    res = {}
    for name in sorted(os.listdir(os.path.join(D, call))):
        m = re.fullmatch(r"dur-(.+)-(new|base)-b(\d+)\.txt", name)
        if not m:
            continue
        us = ncu_us(open(os.path.join(D, call, name)).read())
        if us:
            res.setdefault(m.group(1), {}).setdefault(m.group(2), {})["b" + m.group(3)] = round(sum(us) / len(us), 2)
    return res


def tune(path):
    """dsv4 tune's table: tokens -> choice -> us (CSA 4k + HCA 128k a call)."""
    lines = open(path).read().splitlines()
    cols = lines[1].split()[1:-1]
    res = {}
    for line in lines[2:]:
        f = line.split()
        if f and f[0].isdigit():
            res[f[0]] = dict(zip(cols, (float(x) for x in f[1:1 + len(cols)])))
    return res


def ncu(path):
    keys = ("Duration", "Issue Slots Busy", "Warp Cycles Per Issued Instruction", "Achieved Occupancy",
            "Max Active Clusters", "Dynamic Shared Memory Per Block", "Registers Per Thread")
    res = {}
    for line in open(path):
        for k in keys:
            m = re.match(r"\s+" + re.escape(k) + r"\s+(\S+(?:/\S+)?)?\s+([\d.,]+)$", line)
            if m and k not in res:
                res[k] = float(m.group(2).replace(",", ""))
    return res


AB = "decode ms per step by case (bN: batch N, 8 Flash layers, reference numerics, prompt 16, 32 steps) and " \
     "variant, alternating (scripts/gpu_ab.sh)"
res = {
    "source": "bench/results/2026-12-01-s26",
    "device": "NVIDIA H200 (sm_90)",
    "mma_both": {
        "what": "wip/mma-both (k_mma_fp8's ring, k_mma_fp8s's issue side, k_wg8's scale prologue) against "
                "7dec4dd ('base'): ncu --clock-control none gpu__time_duration.sum, 16 launches in decode steps "
                "without graphs, mean us; kept: k_mma_fp8 (41e24c8) and k_wg8 (e303340), not k_mma_fp8s's",
        "kernels": dur("mma-both"),
        "decode": {"layout": AB + "; 'base' 7dec4dd, new = wip/mma-both", "runs": call_ab(D, "mma-both")},
    },
    "attention_one": {
        "what": "k_attn_one (tuned choice 'one': scores, weights and sums of a (token, row part) in one block, "
                "a cluster of the 8 parts) against the built-in choices ('auto'), one layer, us a call "
                "(bench_kernels --attn-only; HCA 128k does not fit and takes parts32)",
        "v1 (committed)": {"one": attn(os.path.join(D, "one", "attn-one.txt")),
                           "auto": attn(os.path.join(D, "one", "attn-auto.txt"))},
        "v2 (one2/one-v2.diff, not kept)": {"one": attn(os.path.join(D, "one2", "attn-one.txt")),
                                            "auto": attn(os.path.join(D, "one2", "attn-auto.txt"))},
        "v3 (c01d669)": {"one": attn(os.path.join(D, "one3", "attn-one.txt")),
                         "auto": attn(os.path.join(D, "one3", "attn-auto.txt"))},
        "decode_v3_one_token": {"layout": AB + "; one1 = DSV4_TUNE=one1.json (the built-in table with 'one' at "
                                               "1 token), auto = built in", "runs": call_ab(D, "one1")},
        "tune": {"layout": "dsv4 tune --reps 20: us a call, CSA 4k + HCA 128k, choice/score_rows",
                 "by_tokens": tune(os.path.join(D, "one", "tune.txt"))},
        "ncu_v1": {"b1": ncu(os.path.join(D, "one-ncu", "details-b1.txt")),
                   "b64": ncu(os.path.join(D, "one-ncu", "details-b64.txt"))},
        "decode_v1": {"layout": AB + "; one = DSV4_TUNE=one.json, auto = built in", "runs": call_ab(D, "one")},
        "decode_v2": {"layout": AB + "; new = main (e303340 + k_attn_one v2), base = 7dec4dd, one = new with "
                                     "DSV4_TUNE=one.json", "runs": call_ab(D, "one2")},
    },
    "head": head(os.path.join(D, "closing"), "the closing call (c0595f9, scripts/gpu_head.sh), two runs each"),
    "qk_wait": {"what": "k_attn_qk copying the step's own BF16 rows after griddepcontrol.wait (8796d69) against "
                        "7dec4dd ('base')", "decode": {"layout": AB, "runs": call_ab(D, "qk-wait")}},
}
json.dump(res, sys.stdout, indent=1)
print()

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s38: v58) as one JSON:
    python3 bench/results/2026-12-02-s38/summary.py > bench/results/h200-2026-12-02-v58.json
Reads the calls' ab.txt (scripts/gpu_ab.sh; bench_cpu's mean from the third step), k_idx_topk's phase lines
(a -DIX_TRACE build: "ixtrace N n passes p c0 c1 ..."), bench_kernels' indexer tables and the gather probe's
table; standard library only."""
import json
import os
import re
import statistics
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, indexer_tables, ix_phases, x_floor  # noqa: E402


def phases(call):
    """k_idx_topk's phases of a call (its ixtrace.txt)."""
    return ix_phases(os.path.join(D, call, "ixtrace.txt"))


def rounds(call):
    """A call's ab.txt from the third step, the context part of the case (b1-4k)."""
    return call_rounds(D, call, ctx=True)


def gather(path):
    """The gather probe: 'mode G blocks x R rows, dup D, cold|warm' -> slowest block's cycles (median)."""
    res = {}
    for line in open(path):
        m = re.match(r"(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(cold|warm)\s+(\d+)\s+(\d+)", line)
        if m:
            res[f"{m.group(1)} {m.group(2)}x{m.group(3)} dup {m.group(4)} {m.group(5)}"] = int(m.group(6))
    return res


c6, c7 = rounds("closing"), rounds("topk7")
res = {
    "source": "bench/results/2026-12-02-s38",
    "device": "NVIDIA H200 (sm_90)",
    "what": "8 Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64 --overlap [--context C], "
            "ms a step from the third step, 3 rounds alternating in one call; base = 8a1a104",
    "topk_phases_cycles": {
        "what": "k_idx_topk, thread 0's cycles after the PDL wait (a -DIX_TRACE build, bench_kernels --attn-only "
                "--batch 1), medians of 8 calls",
        "base": phases("ixtrace"), "call4_first_version": phases("topk4"), "call5": phases("topk"),
        "landed": phases("topk7"),
    },
    "indexer_alone_us": {
        "what": "bench_kernels --attn-only: the indexer's scores + top-k, host clock over 50 launches; the FP4-keys "
                "table is reference numerics' (the server's default)",
        "landed": indexer_tables(os.path.join(D, "topk7", "attn-new.txt")),
        "base": indexer_tables(os.path.join(D, "topk7", "attn-base.txt")),
    },
    "decode_topk": {
        "landed_call7": c7, "first_commit_call6": c6, "call5": rounds("topk"),
        "per_layer_x_floor_b1_4k": {"landed": x_floor(c7["b1-4k"]["new"]["from_third_mean"], 1),
                                    "base": x_floor(c7["b1-4k"]["base"]["from_third_mean"], 1)},
    },
    "decode_prefetch_not_kept": {
        "what": "call 2 (pf/): new = CSA rows prefetched into L2 + k_idx_topk releasing the attention early, off = "
                "neither (main's code), early = the early release alone",
        "runs": rounds("pf"),
    },
    "gather_probe_cycles": {
        "what": "bench/gather_probe.cu: the slowest block's cycles to gather its rows (1 KB each) into shared "
                "memory; cold = after a 256 MB flush (HBM), warm = the same rows again (L2); dup = blocks reading "
                "the same rows",
        "rows": gather(os.path.join(D, "pf", "gather.txt")),
    },
}
json.dump(res, sys.stdout, indent=1)
print()

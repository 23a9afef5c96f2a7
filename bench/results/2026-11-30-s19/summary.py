#!/usr/bin/env python3
"""This directory's figures (session of 2026-11-30, v38: measurement, no speed change) as one JSON:
    python3 bench/results/2026-11-30-s19/summary.py > bench/results/h200-2026-11-30-v38.json
Reads the calls' summary.txt lines (bench_cpu's model line, abbreviated by each run.sh); standard library only.
Per-layer rooflines as v36's: the weight bytes of a Flash layer at v22's measured 4,226 GB/s copy (0.055 /
0.292 / 0.83 ms at batch 1 / 16 / 64), the LM head's 0.26 ms taken out of a step first."""
import json
import os
import re
import statistics
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import FLOOR, HEAD_MS, LAYERS, rows, x_floor  # noqa: E402

# launches a step of each doubled kernel at batch 16 (ncu, bench/results/2026-11-30-s18/closing/ncu16-table.txt)
LAUNCHES = {"moeup": 8, "moedown": 8, "mmabf16": 15, "wg8mma": 43, "mmafp8": 8, "attn": 8, "hcsplit": 17,
            "wg8pack": 40, "hcmix": 17, "moepack": 16, "moeplan": 8, "idx": 3, "bf16pack": 15, "route": 8,
            "fp8pack": 8, "round": 9}


def lines(call):
    """(name, ms) in the file's order (twice/ names the plain step none-R twice a round)"""
    return [(name, v) for name, _, v in rows(os.path.join(D, call, "summary.txt"))]


# every run of the unchanged 7558c67 step this session, per batch
same = {1: [], 16: [], 64: []}
for call, pat in (("verify", r"b(\d+)-new-\d"), ("twice", r"(none)-\d"), ("forced", r"b(\d+)-none-\d"),
                  ("wo-a-parts", r"b(\d+)-pg0-\d"), ("scale-pf", r"b(\d+)-base-\d"), ("packs", r"b(\d+)-base-\d")):
    for k, v in lines(call):
        m = re.fullmatch(pat, k)
        if m:
            same[16 if m.group(1) == "none" else int(m.group(1))].append(v)
tw = lines("twice")
plain = [v for k, v in tw if k.startswith("none-")]
pm = statistics.mean(plain)
twice = {}
for name, n in LAUNCHES.items():
    runs = [v for k, v in tw if re.fullmatch(rf"{name}-\d", k)]
    add = (statistics.mean(runs) - pm) * 1000
    twice[name] = {"runs_ms": runs, "added_us_per_step": round(add), "launches_per_step": n,
                   "us_per_launch": round(add / n, 1)}
pk = dict(lines("packs"))
res = {
    "source": "bench/results/2026-11-30-s19",
    "device": "NVIDIA H200 (sm_90)",
    "model": "8 Flash-shaped layers (mkmodel --preset flash --sparse, --fill-random), reference numerics",
    "command": "bench_cpu -m <model> --backend cuda --fill-random --numerics reference --prompt 16 --decode 32 --batch B",
    "head": "7558c67 measured in seven calls; packs/: the one-plane BF16 packs (76cf0b2) against 7558c67 in the same call; lo-fetch/: 80b41ae (k_mma_fp8's hi + lo path loads B where used) against 76cf0b2",
    "decode_ms_per_step_7558c67": {f"batch_{b}": {"runs": v, "min": min(v), "median": statistics.median(v),
                                                  "x_floor_min": x_floor(min(v), b),
                                                  "x_floor_median": x_floor(statistics.median(v), b)}
                                   for b, v in same.items() if v},
    "one_plane_packs": {f"batch_{b}": {"new": [pk[f"b{b}-new-{i}"] for i in (1, 2)],
                                       "base_7558c67": [pk[f"b{b}-base-{i}"] for i in (1, 2)]} for b in (1, 16, 64)},
    "later_calls": {
        "wo-a-loop (base 76cf0b2, reference, batch 16)": [v for k, v in lines("wo-a-loop") if re.fullmatch(r"b16-base-\d", k)],
        "lo-fetch (80b41ae against 76cf0b2)": {k: v for k, v in lines("lo-fetch")},
    },
    "critical_path_batch16": {"method": "one idempotent kernel launched twice (twice/hack2.diff); added time over "
                              "the plain step's mean", "plain_runs_ms": plain, "plain_mean_ms": round(pm, 3),
                              "kernels": twice},
    "rooflines": {"per_layer_floor_ms": FLOOR, "head_ms": HEAD_MS, "layers": LAYERS},
}
print(json.dumps(res, indent=1))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s35: v55) as one JSON:
    python3 bench/results/2026-12-01-s35/summary.py > bench/results/h200-2026-12-01-v55.json
Reads the calls' ab.txt (scripts/gpu_ab.sh: each run's mean over all steps and, from steady/ on, from the
third step) and the step traces' tables (bench/ktrace.py's first line); standard library only."""
import json
import os
import re
import statistics
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import FLOOR, HEAD_MS, LAYERS, ab_rounds  # noqa: E402


def rounds(call):
    """case -> variant -> {"all": [ms a step, all steps], "from_third": [...]} by round, with their means."""
    path = os.path.join(D, call, "ab.txt")
    every, third = ab_rounds(path), ab_rounds(path, third=True)
    out = {}
    for case, vs in every.items():
        for v, runs in vs.items():
            d = out.setdefault(case, {})[v] = {"all": runs, "from_third": third.get(case, {}).get(v, [])}
            for k in ("all", "from_third"):
                if d[k]:
                    d[k + "_mean"] = round(statistics.mean(d[k]), 4)
    return out


def step_line(path):
    """bench/ktrace.py's first line: the step, the replay, the time outside (us, medians)."""
    m = re.match(r"step .*? ([\d.]+) us: the replay ([\d.]+), from its end to the next's start ([\d.]+)",
                 open(path).readline())
    return {"step_us": float(m.group(1)), "replay_us": float(m.group(2)), "outside_us": float(m.group(3))}


steady = rounds("steady")
res = {
    "source": "bench/results/2026-12-01-s35",
    "device": "NVIDIA H200 (sm_90)",
    "decode_steady": {
        "what": "8 Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64, 4 rounds alternating "
                "(steady/): ms a step over all 64 steps and from the third (the first two size the scratch and "
                "capture the graph); nocut = v55 as landed (one graph a step), new = with the step's graph in two "
                "pieces (not kept), base = 8e5e8f6",
        "runs": steady,
        "per_layer_x_floor_from_third": {
            case: round((steady[case]["nocut"]["from_third_mean"] - HEAD_MS) / LAYERS / FLOOR[int(case[1:])], 3)
            for case in ("b1", "b16")},
    },
    "decode_all_steps": {
        "what": "the same builds in calls 6 and 7 (step/, verify/), 64 steps, the mean over all of them, 3 rounds",
        "step": rounds("step"),
        "verify": rounds("verify"),
    },
    "between_steps": {
        "what": "bench/ktrace.py over KTRACE_MODE=graph traces (medians over 60 steps, us): the step, its graph's "
                "replay, the time from the replay's end to the next one's start; call 3 (ktrace2/) is 8e5e8f6 "
                "alone, call 7 (verify/) the three builds in one call (new = two pieces, nocut = as landed)",
        "8e5e8f6_call3": {b: step_line(os.path.join(D, "ktrace2", f"kg-{b}.txt")) for b in ("b1", "b2", "b16")},
        "call7": {f"{v} {b}": step_line(os.path.join(D, "verify", f"kg-{v}-{b}.txt"))
                  for v in ("new", "nocut", "base") for b in ("b1", "b16")},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

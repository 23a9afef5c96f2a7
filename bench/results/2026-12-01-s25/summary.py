#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, v45) as one JSON:
    python3 bench/results/2026-12-01-s25/summary.py > bench/results/h200-2026-12-01-v45.json
Reads the calls' ncu kernel durations (dur-*.txt: gpu__time_duration.sum of k_mma_fp8s, wo_a's 8 x 1024 x 4096
FP8 launch, in decode steps without graphs), ab.txt (scripts/gpu_ab.sh) and the closing call's summary.txt and
dsv4 bench's JSON; standard library only. Rooflines as summary_lib's (the per-layer weight-bytes floor)."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_ab, head, ncu_us  # noqa: E402

WO_A_MB = 8 * 1024 * 4096 / 1e6  # wo_a's FP8 weight bytes a layer


def dur(call):
    """variant[-bN] -> {mean_us, runs_us, grid, GB_s} from a call's dur-<variant>[-bN].txt."""
    res = {}
    for name in sorted(os.listdir(os.path.join(D, call))):
        m = re.fullmatch(r"dur-(.+)\.txt", name)
        if not m:
            continue
        text = open(os.path.join(D, call, name)).read()
        us = ncu_us(text)
        grid = re.search(r"launch__grid_size\s+\S*\s+([\d,]+)", text)
        if us:
            mean = sum(us) / len(us)
            res[m.group(1)] = {"mean_us": round(mean, 2), "runs_us": us,
                               "grid": int(grid.group(1).replace(",", "")) if grid else None,
                               "GB_s": round(WO_A_MB * 1e3 / mean)}
    return res


def ab(call):
    return call_ab(D, call)


AB = "decode ms per step by case (bN: batch N, 8 Flash layers, reference numerics, prompt 16, 32 steps) and " \
     "variant ('base': d6420fe), alternating (scripts/gpu_ab.sh)"
DUR = "ncu --clock-control none --metrics gpu__time_duration.sum -k k_mma_fp8s --launch-skip 8 --launch-count 16 " \
      "bench_cpu <8 Flash layers> --numerics reference --prompt 1 --decode 4 --batch B --no-graphs (wo_a: " \
      f"{WO_A_MB:.1f} MB a launch); 'base' is d6420fe"
res = {
    "source": "bench/results/2026-12-01-s25",
    "device": "NVIDIA H200 (sm_90)",
    "wo_a_kernel": {
        "layout": DUR,
        "register_sets_not_kept": {"what": "fp8s-pp / fp8s-pf: the activations in two register sets a step "
                                           "ahead (and pf: prefetch.global.L1 two steps ahead; p8: 8 K parts)",
                                   "batch 1": {**dur("fp8s-ncu"), **dur("fp8s-pf")}},
        "ring_first": {"what": "fp8s-ring: the activations through the ring, four stages at every n",
                       "by_batch": dur("fp8s-ring")},
        "ring_stages": {"what": "fp8s-ring2: three stages past five tokens; p8 = DSV4_MS_P=8 (probe)",
                        "by_batch": dur("fp8s-ring2")},
        "committed": {"what": "verify: 58fff2b's kernel (the first stages' activations a group each)",
                      "by_batch": dur("verify")},
    },
    "decode": {"layout": AB, "fp8s-pp": ab("fp8s-pp"), "fp8s-pf": ab("fp8s-pf"), "fp8s-ring": ab("fp8s-ring"),
               "fp8s-ring2": ab("fp8s-ring2"), "verify": ab("verify")},
    "head": head(os.path.join(D, "closing"), "the closing call (58fff2b, the build verify/ ran the suite on), "
                                             "two runs each"),
}
json.dump(res, sys.stdout, indent=1)
print()

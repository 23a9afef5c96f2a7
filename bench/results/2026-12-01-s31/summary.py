#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s31: v51) as one JSON:
    python3 bench/results/2026-12-01-s31/summary.py > bench/results/h200-2026-12-01-v51.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the routed experts' tables (experts-*.txt: bench_kernels
--experts-only), k_norm_rope alone under ncu (r1/ncu-nr-*.txt), the prefill A/B (pf/pf-*.txt) and the closing
call's summary.txt (summary_lib.head); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import AB_WHAT, EXPERTS_WHAT, call_ab, experts_ref, head, ncu_us, serve  # noqa: E402


def ex(call, name):
    """The reference-numerics row of a call's experts table (summary_lib.experts_ref)."""
    return experts_ref(os.path.join(D, call, name))


def norm_rope_us(path):
    """k_norm_rope's mean us a call under ncu (16 calls a step: the 16-token prefill's, then two decode
    steps' at batch 1)."""
    xs = ncu_us(open(path).read())
    m = lambda a: round(sum(a) / len(a), 3)  # noqa: E731
    return {"prefill_16_calls": m(xs[:16]), "decode_32_calls": m(xs[16:]), "decode_min_max": [min(xs[16:]), max(xs[16:])]}


def prefill(v):
    """The 4,096-token prefill tok/s of pf/'s runs of variant v, by round."""
    out = []
    for i in (1, 2, 3):
        m = re.search(r"4096 tokens each: ([\d.]+) tok/s", open(os.path.join(D, "pf", f"pf-{v}-{i}.txt")).read())
        out.append(float(m.group(1)))
    return out


AB = AB_WHAT
res = {
    "source": "bench/results/2026-12-01-s31",
    "device": "NVIDIA H200 (sm_90)",
    "r1_norm_rope_smem": {
        "what": "k_norm_rope's row in shared memory between the norm, RoPE and FP8SIM (kept, ebb1c98); base = 92aabff",
        "k_norm_rope_alone_us": {v: norm_rope_us(os.path.join(D, "r1", f"ncu-nr-{v}.txt")) for v in ("new", "base")},
        "decode": {"layout": AB, "runs": call_ab(D, "r1")},
    },
    "r3_fp4_layout": {
        "what": "the F16 path's FP4 layout (kept, 40357c8: repacked in place, decoded in 4 logic operations a "
                "word against 7-8; the decode loop 306 SASS a 2 KB group against 352); base = ebb1c98",
        "experts": {v: ex("r3", f"experts-{v}.txt") for v in ("new", "base")},
        "experts_what": EXPERTS_WHAT,
        "decode": {"layout": AB + "; nv1 = NVFP4 experts", "runs": call_ab(D, "r3")},
    },
    "session_against_92aabff": {
        "what": "main (fd7f8a5: r1 + r3 + the layout made at load) against 92aabff, the closing call",
        "closing": {"layout": AB + "; base = 92aabff", "runs": call_ab(D, "closing")},
        "prefill_4096_tok_s": {"what": "pf/: 8 Flash layers, reference numerics, alternating, 3 rounds",
                               "new": prefill("new"), "base": prefill("base")},
    },
    "head": head(os.path.join(D, "closing"), "the closing call (fd7f8a5, scripts/gpu_head.sh HEAD_RUNS=1 "
                                              "HEAD_SERVE=0: one run each, no server; its prefill the first "
                                              "heavy run of the machine: pf/ has three of each)"),
    "served": {"what": "serve/: dsv4 serve on 8 Flash layers (7fe15f4's code: fd7f8a5's) driven by dsv4 bench, "
                       "64-token prompts, 32 out (gpu_suite.sh SERVE_FLASH=1 SERVE_LAYERS=8)",
               "by_concurrency": serve(os.path.join(D, "serve"))},
}
json.dump(res, sys.stdout, indent=1)
print()

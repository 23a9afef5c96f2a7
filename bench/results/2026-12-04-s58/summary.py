#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s58: hc_pre's collapse over a cluster, NVFP4's experts on
2-pair tiles) as one JSON:
    python3 bench/results/2026-12-04-s58/summary.py > bench/results/h200-2026-12-04-s58.json
Reads the decode A/Bs, the logits check and the traces' step lines; standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_lines, call_rounds, ktrace_step, means  # noqa: E402

print(json.dumps({
    "session": "s58, 2026-12-04",
    "machine": "one H200 a call",
    "decode_setup": "8 Flash-shaped layers (dsv4 mkmodel --preset flash --layers 8 --sparse), reference numerics, "
                    "--fill-random, 16-token prompt, 64 decode steps, bench_cpu --overlap; ms a step from the third "
                    "step on; rounds alternating in one call",
    "hccl": {"what": "hccl.diff (not kept): hc_pre's / hc_head's collapse as a cluster of 8 one-warp blocks a token "
                     "up to 64 tokens (new) against the one-block kernel (cl0: DSV4_HC_CL=0), one binary",
             "decode_ms": means(call_rounds(D, "hccl")), "bits": call_lines(D, "hccl", "bits.txt"),
             "traces": {t: ktrace_step(os.path.join(D, "hccl", f"kt-{t}.txt")) for t in ("new-b1", "cl0-b1")}},
    "nvbp": {"what": "8 layers with NVFP4 experts: 2-pair tiles forced (bp1: DSV4_MOE_BP=1) against the 8-pair tiles "
                     "the tree took then (new), 4e84d0b's build",
             "decode_ms": means(call_rounds(D, "nvbp"))},
}, indent=1))

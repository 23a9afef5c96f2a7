#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-05, s66: 16 attention parts measured; transformers' eager step and
dsv4's on the same 4 Flash layers) as one JSON:
    python3 bench/results/2026-12-05-s66/summary.py > bench/results/h200-2026-12-05-s66.json
Standard library only."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import attn, call_rounds, suite, table_rounds  # noqa: E402


def dsv4_steps():
    """hf/'s dsv4 runs: batch -> ms a step from the third."""
    out = {}
    for b in (1, 8, 16):
        m = re.search(r"([\d.]+) ms/step from the third", open(os.path.join(D, "hf", f"dsv4-b{b}.txt")).read())
        out[b] = float(m.group(1)) if m else None
    return out


hf = json.load(open(os.path.join(D, "hf", "hf.json")))
print(json.dumps({
    "session": "s66, 2026-12-05",
    "machine": "one H200 (one call, two bundles in turn: scripts/gpu_multi.sh)",
    "p16": {"what": "branch wip/parts16 at 33b5d52 (DSV4_ATTN_PARTS 16) against main's build at 906c25f: the attention "
                    "alone, two rounds (bench_kernels --attn-only, 64 heads of 512, BF16 rows, reference numerics); "
                    "the whole suite with the base's logits set aside (cut at 330 s in its memchecks: every test before "
                    "passed); decode on 8 Flash-shaped layers, reference numerics, --fill-random, 16-token prompt, 64 "
                    "steps, --overlap, ms a step from the third, two rounds",
            "attention_us": table_rounds(D, "p16", attn), "suite": suite(D, "p16"),
            "decode_ms": call_rounds(D, "p16")},
    "hf": {"what": "transformers' eager DeepseekV4ForCausalLM (bench/hf_baseline.py --layers 4 --batch 1,8,16 --prompt "
                   "16 --decode 8, BF16 weights) and dsv4 (bench_cpu, 4 Flash-shaped layers, reference numerics, "
                   "--fill-random, 16-token prompt, 64 steps, --overlap, ms a step from the third) on main at 906c25f",
           "dsv4_ms_per_step": dsv4_steps(), "transformers": hf},
}, indent=1))

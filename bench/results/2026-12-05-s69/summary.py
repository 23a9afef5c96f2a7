#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-05, s69: k_attn_one's indexer loads first, measured and not landed;
the whole GPU suite on s68's tree) as one JSON:
    python3 bench/results/2026-12-05-s69/summary.py > bench/results/mixed-2026-12-05-s69.json
Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import attn, call_lines, call_rounds, table_rounds  # noqa: E402

ATTN_WHAT = ("the attention alone (bench_kernels --attn-only --batch 1,2,3 --contexts 4096,32768,131072; 64 heads of "
             "512, BF16 rows, reference numerics), µs a call by round")
DECODE_WHAT = ("decode on 8 Flash-shaped layers (reference numerics, --fill-random, 16-token prompt, 64 steps, "
               "--overlap), ms a step from the third, by round")


def call(name, what, machine):
    return {"what": what, "machine": machine, "attention_us": table_rounds(D, name, attn),
            "decode_ms": call_rounds(D, name), "attn_ab": call_lines(D, name, "attn-ab.txt"),
            "bits": call_lines(D, name, "bits.txt")}


print(json.dumps({
    "session": "s69, 2026-12-05",
    "fin": call("fin", "1f5e2a9 with ixf.diff: k_attn_one's indexer count and choices loaded before q, 8-head blocks "
                "loading only their q (ixf) against DSV4_ATTN_ONE_IXF=0 (off, the same binary) and 1f5e2a9 (base); "
                + ATTN_WHAT + "; " + DECODE_WHAT + " at batch 1, 4k, 128k; not landed; the whole GPU suite passed "
                "on 1f5e2a9 (suite.txt.gz)", "H100 80GB HBM3 (copy ~3,000 GB/s)"),
}, indent=1, ensure_ascii=False))

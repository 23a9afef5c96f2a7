#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-05, s69: k_attn_one's indexer loads first, measured and not landed;
the whole GPU suite on s68's tree) as one JSON:
    python3 bench/results/2026-12-05-s69/summary.py > bench/results/mixed-2026-12-05-s69.json
Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import ATTN13_WHAT, DECODE_OVL_WHAT, attn_call  # noqa: E402

print(json.dumps({
    "session": "s69, 2026-12-05",
    "fin": attn_call(D, "fin", "1f5e2a9 with ixf.diff: k_attn_one's indexer count and choices loaded before q, 8-head "
                     "blocks loading only their q (ixf) against DSV4_ATTN_ONE_IXF=0 (off, the same binary) and 1f5e2a9 "
                     "(base); " + ATTN13_WHAT + "; " + DECODE_OVL_WHAT + " at batch 1, 4k, 128k; not landed; the whole "
                     "GPU suite passed on 1f5e2a9 (suite.txt.gz)", "H100 80GB HBM3 (copy ~3,000 GB/s)"),
}, indent=1, ensure_ascii=False))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-05, s68: k_attn_one's row copies and scores overlapped three ways,
measured and not landed) as one JSON:
    python3 bench/results/2026-12-05-s68/summary.py > bench/results/mixed-2026-12-05-s68.json
Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import ATTN13_WHAT as ATTN_WHAT, DECODE_OVL_WHAT as DECODE_WHAT, attn_call  # noqa: E402


def call(name, what, machine):
    return attn_call(D, name, what, machine)


print(json.dumps({
    "session": "s68, 2026-12-05",
    "pipe": call("pipe", "fc684c4: k_attn_one's compressed rows issued by two warps a 16-row group at a time on "
                 "mbarriers, six warps taking each tile's scores once landed (pipe) against DSV4_ATTN_ONE_PIPE=0 (off, "
                 "the same binary) and f3c796b (base); " + ATTN_WHAT + "; " + DECODE_WHAT + " at batch 1, 4k, 128k; "
                 "not landed", "H100 80GB HBM3 (copy ~3,000 GB/s)"),
    "bulk": call("bulk", "dbf77ec: the compressed rows by bulk copies, a thread a row, on 16-row groups' mbarriers, "
                 "all warps taking the scores group by group (pipe) against off and base; " + ATTN_WHAT + "; " +
                 DECODE_WHAT + "; not landed", "H200 (copy 4,265 GB/s)"),
    "bulk2": call("bulk2", "1951211: as bulk, the groups issued by one warp with at most 2 (nf2), 3 (nf3) or 1 (nf1) "
                  "in flight, against off; " + ATTN_WHAT + "; " + DECODE_WHAT + " at 4k, 128k; not landed",
                  "H100 80GB HBM3 (copy ~3,000 GB/s)"),
}, indent=1, ensure_ascii=False))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-05, s67: the one-pass attention for parts of up to 176 rows) as one
JSON:
    python3 bench/results/2026-12-05-s67/summary.py > bench/results/h100-2026-12-05-s67.json
Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import attn, call_lines, call_rounds, table_rounds  # noqa: E402

print(json.dumps({
    "session": "s67, 2026-12-05",
    "machine": "one H100 80GB HBM3 (device-to-device copy 3,001 GB/s in the same run)",
    "one": {"what": "main at 2c08ddb (DSV4_ATTN_ONE_ROWS: k_attn_one for parts of up to N rows, the four kernels past "
                    "them), one binary, knobs alternating: r96 (s66's bound), r176 (8 heads a block at one token), "
                    "r176h16 (16 heads); the attention alone (bench_kernels --attn-only --batch 1,2,4 --contexts "
                    "65536,98304,131072, 64 heads of 512, BF16 rows, reference numerics), two rounds; decode on 8 "
                    "Flash-shaped layers at batch 1 with a 128k / 96k context (reference numerics, --fill-random, "
                    "16-token prompt, 64 steps, --overlap, ms a step from the third), two rounds; test_ops_cuda "
                    "passed with the bound at 176 and at 96",
            "attention_us": table_rounds(D, "one", attn),
            "decode_ms": call_rounds(D, "one"),
            "attn_ab": call_lines(D, "one", "attn-ab.txt")},
}, indent=1))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s70: k_attn_one's push modes measured and dropped, its paired
score tiles and 16 warps a block made the default) as one JSON:
    python3 bench/results/2026-12-06-s70/summary.py > bench/results/mixed-2026-12-06-s70.json
Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import DECODE_OVL_WHAT, attn, attn_call, call_lines, call_rounds, table_rounds  # noqa: E402

ATTN_WHAT = ("the attention alone (bench_kernels --attn-only --batch 1,2,3 --contexts 4096,131072; 64 heads of 512, "
             "BF16 rows, reference numerics), µs a call by round")
H100 = "H100 80GB HBM3 (copy ~3,000 GB/s)"
one = attn_call(D, "one", "abc0a3c7: k_attn_one's push modes (pu1 / pu2: the parts' weighted sums stored to their "
                "heads' owners before the cluster barrier, from the fragments / through ob; pu3: read after it 16 bytes "
                "a load), s69's switches (w16: 16 warps a block; sp8: score tiles paired; sp16: both), the default "
                "(w8, the same binary) and 1f5e2a9 (base); " + ATTN_WHAT + "; " + DECODE_OVL_WHAT + " at batch 1 x 4k; "
                "test_ops_cuda and the logits byte for byte with each push mode and with sp16, memcheck with pu1 / pu2",
                H100)
one["bits"] = {v: call_lines(D, "one", "bits-%s.txt" % v) for v in ("pu1", "pu2", "pu3", "sp16")}
print(json.dumps({
    "session": "s70, 2026-12-06",
    "one": one,
    "def": {"what": "fa70e0dd: the new defaults (paired score tiles always; 16 warps a block from 2 tokens or where a "
                    "part may hold 96 rows) against 1f5e2a9 (base); " + ATTN_WHAT + "; test_ops_cuda, the logits byte "
                    "for byte, memcheck at 1-2 tokens", "machine": H100, "attention_us": table_rounds(D, "def", attn),
            "attn_ab": call_lines(D, "def", "attn-ab.txt"), "bits": call_lines(D, "def", "bits.txt")},
    "h2": {"what": "c34e4e77 (the same kernels as def/) against 1f5e2a9 (base), asked of an H200 and run on an H100; "
                   + ATTN_WHAT, "machine": H100, "attention_us": table_rounds(D, "h2", attn),
           "attn_ab": call_lines(D, "h2", "attn-ab.txt")},
    "dec": {"what": "fa70e0dd (the def/ bundle) against 1f5e2a9 (base): " + DECODE_OVL_WHAT + " at batch 2 and 3 x 4k",
            "machine": H100, "decode_ms": call_rounds(D, "dec")},
}, indent=1, ensure_ascii=False))

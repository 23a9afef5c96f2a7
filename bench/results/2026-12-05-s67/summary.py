#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-05, s67: the one-pass attention for parts of up to 176 rows and at 3
tokens; k_attn_mdp for few tokens with many rows) as one JSON:
    python3 bench/results/2026-12-05-s67/summary.py > bench/results/h100-2026-12-05-s67.json
Standard library only."""
import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import attn, call_lines, call_rounds, suite, table_rounds  # noqa: E402

ATTN_WHAT = ("the attention alone (bench_kernels --attn-only, 64 heads of 512, BF16 rows, reference numerics), µs a "
             "call by round")
DECODE_WHAT = ("decode on 8 Flash-shaped layers (reference numerics, --fill-random, 16-token prompt, 64 steps, "
               "--overlap), ms a step from the third, by round")


def ncu_table(path):
    """ncu --print-summary per-kernel's rows: 'kernel (grid)' -> [min, max, mean] us."""
    out, name = {}, None
    for line in (gzip.open if path.endswith(".gz") else open)(path, "rt"):
        m = re.match(r"\s+(?:void )?(k_attn_\w+(?:<[^>]*>)?)\(.*?\) (\(\d+, \d+, \d+\))x", line)
        if m:
            name = f"{m.group(1)} {m.group(2)}"
        m = re.match(r"\s+gpu__time_duration.sum\s+us\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m and name:
            out.setdefault(name, [float(x) for x in m.groups()])
            name = None
    return out


def ncu(call, name):
    p = os.path.join(D, call, name)
    return ncu_table(p) if os.path.exists(p) else None


print(json.dumps({
    "session": "s67, 2026-12-05",
    "machine": "one H100 80GB HBM3 in every call (device-to-device copy ~3,000 GB/s in the same runs)",
    "one": {"what": "main at 2c08ddb (DSV4_ATTN_ONE_ROWS: k_attn_one for parts of up to N rows, the four kernels past "
                    "them), one binary, knobs alternating: r96 (s66's bound), r176 (8 heads a block at one token), "
                    "r176h16 (16 heads); " + ATTN_WHAT + " at 64k / 96k / 128k and 1 / 2 / 4 tokens; " + DECODE_WHAT +
                    " at batch 1 with a 128k / 96k context; test_ops_cuda passed with the bound at 176 and at 96",
            "attention_us": table_rounds(D, "one", attn), "decode_ms": call_rounds(D, "one"),
            "attn_ab": call_lines(D, "one", "attn-ab.txt")},
    "one34": {"what": "ac83142: one (k_attn_one, 16 heads a block) at 2-4 tokens (a tune file) against the built-in "
                      "table (parts32 from 3 tokens); " + ATTN_WHAT + " at 3 / 4 tokens, 4k-128k; m1-tree-1.txt: the "
                      "attention at one and two tokens on a 1M context (the four kernels)",
              "attention_us": table_rounds(D, "one34", attn), "attn_ab": call_lines(D, "one34", "attn-ab.txt")},
    "one3": {"what": "one to 3 tokens (a tune file) against the built-in table (one to 2); " + ATTN_WHAT +
                     " at 2 / 3 tokens; " + DECODE_WHAT + " at batch 3 with a 16-token prompt, a 4k and a 128k "
                     "context; dsv4 tune (timing 3 tokens too) on the same GPU: tune.txt, tune-dev.json",
             "attention_us": table_rounds(D, "one3", attn), "decode_ms": call_rounds(D, "one3"),
             "attn_ab": call_lines(D, "one3", "attn-ab.txt")},
    "m1": {"what": "ncu (each kernel alone, the GPU's own clocks; ncu-all with its cache flush, ncu-none without) of the "
                   "attention's kernels at 1 / 2 tokens on a 1M context; score blocks of 64 rows (sr64, a tune file) "
                   "against the built-in 16 (tree), " + ATTN_WHAT + " at 1M / 512k, 1-4 tokens",
           "ncu_none_us": ncu("m1", "ncu-none.txt"), "ncu_all_us": ncu("m1", "ncu-all.txt"),
           "attention_us": table_rounds(D, "m1", attn), "attn_ab": call_lines(D, "m1", "attn-ab.txt")},
    "mdp1": {"what": "041edcc's k_attn_mdp: a void A/B (DSV4_ATTN_MDP_ROWS=0 read as unset: both columns ran "
                     "k_attn_mdp); test_ops_cuda passed; ncu of the chain at 1M, one token",
             "ncu_none_us": ncu("mdp1", "ncu.txt")},
    "mdp": {"what": "fc58ab2: k_attn_mdp (a warp a part) against k_attn_md16 (DSV4_ATTN_MDP=0), one binary, "
                    "alternating: " + ATTN_WHAT + " at 1M / 256k / 128k, 1 / 2 / 4 tokens; " + DECODE_WHAT +
                    " at batch 1 with a ~1M (1,040,000) and a 128k context; test_ops_cuda passed; ncu of the chain at "
                    "1M, one token",
            "attention_us": table_rounds(D, "mdp", attn), "decode_ms": call_rounds(D, "mdp"),
            "attn_ab": call_lines(D, "mdp", "attn-ab.txt"), "ncu_none_us": ncu("mdp", "ncu.txt")},
    "pv16": {"what": "5679b4d: the weighted sum's slices of 16 (p16) or 64 (p64) dimensions at 1-4 tokens (tune files) "
                     "against the built-in table (tree: one8 / one, falling back to 32-dimension slices where the "
                     "parts exceed 176 rows); " + ATTN_WHAT + " at 1M / 256k",
             "attention_us": table_rounds(D, "pv16", attn), "attn_ab": call_lines(D, "pv16", "attn-ab.txt")},
    "pvl": {"what": "b8b9d0c (pvl.diff, reverted): k_attn_pv in 128-row tiles (AM_PV_LONG) to 4 tokens past 768 rows "
                    "against 64 (DSV4_ATTN_PV_LONG=0), one binary; test_ops_cuda passed; " + ATTN_WHAT + " at 1M / "
                    "256k, 1-4 tokens; " + DECODE_WHAT + " at batch 1 with a ~1M context",
            "attention_us": table_rounds(D, "pvl", attn), "decode_ms": call_rounds(D, "pvl"),
            "attn_ab": call_lines(D, "pvl", "attn-ab.txt")},
    "ax": {"what": "16 of the oracle audit's random tiny models through test_gpu_vs_cpu on the GPU (0a12b62); the "
                   "lines that came back", "summary": call_lines(D, "ax", "summary.txt")},
    "verify": {"what": "794714c: the whole GPU suite (scripts/gpu_verify.sh) on s67's defaults, the logits against "
                       "f4385ae's build (the session's first commit) byte for byte",
               "suite": suite(D, "verify"), "bits": call_lines(D, "verify", "bits.txt")},
}, indent=1))

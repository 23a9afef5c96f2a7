#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s60: s59's two prepared attention branches measured) as one JSON:
    python3 bench/results/2026-12-04-s60/summary.py > bench/results/h200-2026-12-04-s60.json
Reads the attention tables, the decode A/Bs, the suite and the memchecks; standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import attn, call_rounds, means, suite, table_rounds  # noqa: E402


def attn_calls(call):
    """A call's bench_kernels --attn-only tables: row -> bB -> variant -> [us a call, by round]."""
    return table_rounds(D, call, attn)


def memchecks(call):
    """Each memcheck file's last ERROR SUMMARY line."""
    out = {}
    for f in sorted(os.listdir(os.path.join(D, call))):
        if f.startswith("san-"):
            lines = [ln.strip() for ln in open(os.path.join(D, call, f)) if "ERROR SUMMARY" in ln]
            out[f[4:-4]] = lines[-1] if lines else "no summary"
    return out


print(json.dumps({
    "session": "s60, 2026-12-04",
    "machine": "one H200 a call",
    "setup": "bench_kernels --attn-only (64 heads of 512, BF16 cached rows, reference numerics); decode: 8 Flash-shaped "
             "layers, reference numerics, --fill-random, 16-token prompt, 64 steps, bench_cpu --overlap, ms a step "
             "from the third. new = tmp/s60-merge (wip/md16-global + wip/one-join-early), ej0 = the same binary with "
             "DSV4_ATTN_ONE_EJ=0 (the landed kernels), base = main's build at the session's start",
    "mrg": {"what": "the whole suite (logits byte for byte against the base; its quick memchecks cut by the 330-s "
                    "limit at test_overlap), attention at 1 / 16 / 64 tokens (new ran beside the cut memcheck: use "
                    "ej0 for 16 / 64), decode at 1 / 16 / 64, one round",
            "suite": suite(D, "mrg"), "attention_us": attn_calls("mrg"), "decode_ms": means(call_rounds(D, "mrg"))},
    "mrg2": {"what": "the memchecks mrg left (Flash-shaped decode at 1 / 16 / 64, test_overlap, the attention kernels "
                     "alone), then k_attn_one's early join at 1 token: alone three rounds, decode at batch 1 two",
             "memchecks": memchecks("mrg2"), "attention_us": attn_calls("mrg2"),
             "decode_ms": call_rounds(D, "mrg2")},
    "aftrace": {"what": "k_attn_one's phases at one token (AF_TRACE build; bench/af_trace.py), ncu on k_attn_md16 at "
                        "64 tokens (CSA 4k) as landed",
                "attention_us": attn_calls("aftrace")},
    "late": {"what": "k_attn_one's maxima and sums stored after the weights phase's sync; both columns ran the change "
                     "(cuda_env_int returns the default for 0)", "attention_us": attn_calls("late"),
             "decode_ms": call_rounds(D, "late")},
    "qkp": {"what": "the scores' blocks making the part weights (k_attn_qk<NT, true, true> + k_attn_join); qkp0 ran "
                    "the change too; base: main's build before s60", "suite": suite(D, "qkp"),
            "attention_us": attn_calls("qkp")},
    "mdr": {"what": "k_attn_md16 with a running max and sum a lane (landed); base: main's build at 2130abe",
            "suite": suite(D, "mdr"), "attention_us": attn_calls("mdr"), "decode_ms": means(call_rounds(D, "mdr"))},
}, indent=1))

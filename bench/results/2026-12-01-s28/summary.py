#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s28: v48) as one JSON:
    python3 bench/results/2026-12-01-s28/summary.py > bench/results/h200-2026-12-01-v48.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the attention tables (csa-pt/attn-*.txt), the routed experts'
tables (experts-*.txt: bench_kernels --experts-only) and the closing call's summary.txt (summary_lib.head);
standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import EXPERTS_WHAT, attn as attn_rows, call_ab, experts_ref, head  # noqa: E402


def attn(call, name):
    """A call's attention table (summary_lib.attn_rows)."""
    return attn_rows(os.path.join(D, call, name))


def ex(call, name):
    """The reference-numerics row of a call's experts table (summary_lib.experts_ref)."""
    return experts_ref(os.path.join(D, call, name))


AB = "decode ms per step by case (bN: batch N, 8 Flash layers, reference numerics, prompt 16, 32 steps; c32k: a " \
     "32,768-token context) and variant, alternating (scripts/gpu_ab.sh)"
EXP = EXPERTS_WHAT
res = {
    "source": "bench/results/2026-12-01-s28",
    "device": "NVIDIA H200 (sm_90)",
    "csa_page_table_not_decided": {
        "what": "wip/one-csa-pt (k_attn_one for CSA: the page table in shared memory before the wait) against "
                "709921c; one2 = k_attn_one up to 2 tokens (one2tok.json) against the built-in table; nob = "
                "moe16_nob (then the default at 4-12 tokens) against ring = DSV4_MOE_NOB=0",
        "attention": {v: attn("csa-pt", f"attn-{v}.txt") for v in ("new", "base")},
        "decode": {"layout": AB, "runs": call_ab(D, "csa-pt")},
    },
    "half_not_kept": {
        "what": "k_moe16 on one m tile a block at 1 token (half/half.diff, DSV4_MOE_HALF: twice the blocks, 16-row "
                "ring stages, five blocks an SM) against 709921c",
        "experts": {f"DSV4_MOE_HALF={v} ({r})": ex("half", f"experts-h{v}-{r}.txt") for v in (0, 1) for r in (1, 2)},
        "decode": {"layout": AB + "; h1 / h0: DSV4_MOE_HALF=1 / 0", "runs": call_ab(D, "half")},
    },
    "launch_bounds_and_tiles_of_2": {
        "what": "base = 709921c (k_moe16 at 130 registers: three blocks an SM); fix = the launch bounds without a "
                "minimum (120 registers, 24d8aca; DSV4_MOE_BP=0); bp = tiles of 2 pairs, four ring stages "
                "(3434cb5's kernel, then by default up to 16 tokens)",
        "experts": {f"{v} ({r})": ex("bp", f"experts-{v}-{r}.txt") for v in ("base", "fix", "bp") for r in (1, 2)},
        "experts_what": EXP,
        "decode": {"layout": AB, "runs": call_ab(D, "bp")},
    },
    "tiles_of_2_at_4_to_12": {
        "what": "3434cb5's default (tiles of 2 pairs at 4-12 tokens) against DSV4_MOE_BP=0 (moe16_nob at 4-12) and "
                "DSV4_MOE_BP=0 DSV4_MOE_NOB=0 (the three-stage ring everywhere)",
        "experts": {f"{v} ({r})": ex("bp2", f"experts-{v}-{r}.txt") for v in ("bp", "nob", "ring") for r in (1, 2)},
        "experts_what": EXP,
        "decode": {"layout": AB, "runs": call_ab(D, "bp2")},
    },
    "tiles_of_4_not_kept": {
        "what": "tiles of 4 pairs (bp4/bp4.diff, DSV4_MOE_BP4=1) against the default at 8-64 tokens",
        "experts": {v: ex("bp4", f"experts-{v}.txt") for v in ("auto", "bp4")},
        "experts_what": EXP,
        "decode": {"layout": AB, "runs": call_ab(D, "bp4")},
    },
    "session_against_709921c": {
        "what": "the session's code (8b69118) against 709921c in the closing call",
        "experts": {v: ex("closing", f"experts-{v}.txt") for v in ("new", "base")},
        "experts_what": EXP,
        "decode": {"layout": AB + "; base = 709921c", "runs": call_ab(D, "closing")},
    },
    "head": head(os.path.join(D, "closing"), "the closing call (8b69118, scripts/gpu_head.sh HEAD_RUNS=1 "
                                              "HEAD_SERVE=0: one run each, no server)"),
}
json.dump(res, sys.stdout, indent=1)
print()

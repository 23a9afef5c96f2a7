#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s30: v50) as one JSON:
    python3 bench/results/2026-12-01-s30/summary.py > bench/results/h200-2026-12-01-v50.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the routed experts' tables (experts-*.txt: bench_kernels
--experts-only), the indexer's rows (attn-*.txt: bench_kernels --attn-only), k_hc_post alone under ncu
(m3/ncu-post-*.txt) and the closing call's summary.txt (summary_lib.head); standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import AB_WHAT, EXPERTS_WHAT, attn, call_ab, experts_ref, head, indexer, ncu_us  # noqa: E402


def ex(call, name):
    """The reference-numerics row of a call's experts table (summary_lib.experts_ref)."""
    return experts_ref(os.path.join(D, call, name))


AB = AB_WHAT
EXP = EXPERTS_WHAT
res = {
    "source": "bench/results/2026-12-01-s30",
    "device": "NVIDIA H200 (sm_90)",
    "m3_three_branches": {
        "what": "s29's prepared branches on one merge: moe-flow (not kept; f1 = DSV4_MOE_FLOW=1, f0 = off), "
                "idx-q-early (kept, f7504de), hc-post-loads (kept, b4ed7cf); base = 2b5a380",
        "experts": {v: ex("m3", f"experts-{v}.txt") for v in ("f1", "f0", "base")},
        "experts_what": EXP,
        "indexer_us": {v: indexer(os.path.join(D, "m3", f"attn-{v}.txt")) for v in ("new", "base")},
        "attention_us": attn(os.path.join(D, "m3", "attn-new.txt")),
        "k_hc_post_alone_us": {v: ncu_us(open(os.path.join(D, "m3", f"ncu-post-{v}.txt")).read())
                               for v in ("new", "base")},
        "decode": {"layout": AB + "; new = the merge (flow on at 1-2 tokens), f0 = flow off", "runs": call_ab(D, "m3")},
    },
    "bp1_not_kept": {
        "what": "tiles of one pair with a five-stage ring at one token (bp1/bp1.diff): bp1 = on, off = "
                "DSV4_MOE_BP1=0, rb2 = with two row blocks a block, bp2 = the 2-pair ring, base = 2b5a380",
        "experts": {v: ex("bp1", f"experts-{v}.txt") for v in ("bp1", "off", "rb2", "bp2", "base")},
        "experts_what": EXP,
        "decode": {"layout": AB + "; nv1 = NVFP4 experts", "runs": call_ab(D, "bp1")},
    },
    "mixsplit_not_kept": {
        "what": "one token's hc_pre collapse in k_hc_mix's last block (mixsplit/mixsplit.diff): new = on, off = "
                "DSV4_HC_MIXSPLIT=0, base = e42312a (main before it), base0 = 2b5a380",
        "decode": {"layout": AB, "runs": call_ab(D, "mixsplit")},
    },
    "session_against_2b5a380": {
        "what": "main (e42312a's code: f7504de + b4ed7cf over 2b5a380) against 2b5a380: the closing call, then "
                "batch 2 again (b2/: 4 rounds; b2/r2: against main without either change, noidx / nohc)",
        "closing": {"layout": AB + "; base = 2b5a380", "runs": call_ab(D, "closing")},
        "b2": {"layout": AB + "; base = 2b5a380", "runs": call_ab(D, "b2")},
        "b2_r2": {"layout": AB + "; noidx = indexer.cu at 2b5a380, nohc = hc.cu at 2b5a380",
                  "runs": call_ab(D, os.path.join("b2", "r2")),
                  "indexer_us_batch_2": {v: indexer(os.path.join(D, "b2", "r2", f"attn-{v}.txt"))
                                         for v in ("new", "noidx")}},
    },
    "head": head(os.path.join(D, "closing"), "the closing call (e42312a's code, scripts/gpu_head.sh HEAD_RUNS=1 "
                                              "HEAD_SERVE=0: one run each, no server)"),
}
json.dump(res, sys.stdout, indent=1)
print()

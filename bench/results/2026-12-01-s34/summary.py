#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s34: v54) as one JSON:
    python3 bench/results/2026-12-01-s34/summary.py > bench/results/h200-2026-12-01-v54.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the attention tables (bench_kernels --attn-only) and the phase
traces (bench/af_trace.py's input); standard library only."""
import json
import os
import statistics
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import AB_WHAT, attn, call_ab  # noqa: E402


def attn_rounds(call, variants, rounds=(1, 2, 3), names=None):
    """variant (renamed by names) -> table -> bB -> the mean over the rounds of us a call (and the rounds')."""
    out = {}
    for v in variants:
        tabs = [attn(os.path.join(D, call, f"attn-{v}-{i}.txt")) for i in rounds]
        out[(names or {}).get(v, v)] = {k: {b: {"mean_us": round(statistics.mean(t[k][b] for t in tabs), 2),
                          "rounds_us": [t[k][b] for t in tabs]} for b in tabs[0][k]} for k in tabs[0]}
    return out


res = {
    "source": "bench/results/2026-12-01-s34",
    "device": "NVIDIA H200 (sm_90)",
    "attention_batch1": {
        "what": "the attention alone at batch 1-2 (bench_kernels --attn-only, us a call), 3 rounds alternating: new = "
                "k_attn_one's cuts (am_den four pairs a lane at once and branch-free, the sink loaded ahead, q's loads "
                "beside the indexer's, the weights without a division; also k_attn_md16's am_den: the four-kernel "
                "path, HCA 1152 rows), base = 573ff27 (main at the session's start); quad = the parts' sums read a "
                "column quad a thread (not kept); the call's files name new 'prev' and quad 'new'",
        "variants": attn_rounds("quad", ("prev", "base", "new"), names={"prev": "new", "new": "quad"}),
    },
    "attention_variants_not_kept": {
        "gx": {"what": "k_attn_one's parts' sums through L2 (global stores, the cluster barrier, __ldcg) instead of "
                       "distributed shared memory; new = the den change alone at that point",
               **attn_rounds("gx", ("new", "gx", "base"))},
        "push": {"what": "k_attn_one's parts' sums pushed to their owners by st.async on an mbarrier (no second "
                         "cluster barrier, no remote loads); new = the kept cuts",
                 **attn_rounds("push", ("new", "push", "base"))},
    },
    "ex1": {
        "what": "k_attn_one's first exchange (scores to their owners, maxima to every part) by st.async on an "
                "mbarrier a block (ex1, DSV4_ATTN_ONE_EX1=1 in that build) against the same binary without (cur) "
                "and f6bb190 (base); kept at one token only (slower at two)",
        **attn_rounds("ex1", ("ex1", "cur", "base")),
    },
    "final": {
        "what": "the attention alone with everything kept (EX1 at one token) against 573ff27, one round after the "
                "suite (verify2/)",
        "new": attn(os.path.join(D, "verify2", "attn-new.txt")),
        "base": attn(os.path.join(D, "verify2", "attn-base.txt")),
    },
    "other_variants_not_kept": {
        "qlate": {"what": "q's loads after the indexer's instead of before (new) against f6bb190 (base), 4 rounds",
                  **attn_rounds("qlate", ("new", "base"), rounds=(1, 2, 3, 4))},
        "md16": {"what": "k_attn_md16's max four pairs a lane at once (new) against f6bb190 (base), 4-64 tokens",
                 **attn_rounds("md16", ("new", "base"))},
    },
    "decode": {
        "what": "decode with the kept cuts against 573ff27 (base), 3 rounds; bB-4k: 4k context",
        "layout": AB_WHAT, "runs": call_ab(D, "verify"),
    },
    "qkw": {
        "what": "s33's wip/qkw (the scores on wgmma, DSV4_ATTN_QKW=1; not kept): the attention at 16 / 64 tokens "
                "off (0) / on (1), and decode qkw / mma alternating",
        "attention": {f"qkw_{v}": attn(os.path.join(D, "qkw", f"attn-{v}.txt")) for v in (0, 1)},
        "decode": {"layout": AB_WHAT, "runs": call_ab(D, "qkw")},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

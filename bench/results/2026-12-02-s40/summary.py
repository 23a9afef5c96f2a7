#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s40: v60) as one JSON:
    python3 bench/results/2026-12-02-s40/summary.py > bench/results/h200-2026-12-02-v60.json
Reads the calls' ab.txt (scripts/gpu_ab.sh; bench_cpu's mean from the third step), the node tables'
k_mma_fp8s rows (bench/ktrace.py: how far wo_a advances a batch-1 step), bench_kernels' indexer and experts
tables and the closing head figures; standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, experts_ref, head, indexer_tables, ix_phases, ktrace_step, x_floor  # noqa: E402


def rounds(call, ctx=True):
    """A call's ab.txt from the third step (ctx: the context part of the case, b16-32k)."""
    return call_rounds(D, call, ctx=ctx)


def wo_a_adv(call):
    """The node table's k_mma_fp8s rows (wo_a, one a layer): how far each advances the step, us."""
    out = []
    for line in open(os.path.join(D, call, "kt-new-b1.txt")):
        if "k_mma_fp8s" in line and re.match(r"\s*\d+ ", line):  # the node rows (not the per-name summary)
            out.append(float(re.split(r"\s{2,}", line.strip())[3].split()[-1]))
    return out


def kt(call):
    return {"step": ktrace_step(os.path.join(D, call, "kt-new-b1.txt")), "wo_a_advance_us": wo_a_adv(call)}


f1 = rounds("fp8s")
res = {
    "source": "bench/results/2026-12-02-s40",
    "device": "NVIDIA H200 (sm_90)",
    "what": "8 Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64 --overlap [--context C], "
            "ms a step from the third step, rounds alternating in one call",
    "fp8s_pairs": {
        "what": "fp8s/: k_mma_fp8s (wo_a at 1-8 tokens) with both steps of a ring stage summed side by side (landed, "
                "6bd09e3); base = a build of 5ddc446; the node table against s39's hcmix1/kt-new-b1.txt",
        "decode": {k: v for k, v in f1.items() if not k.endswith("32k")},
        "node_table_b1": kt("fp8s"),
        "per_layer_x_floor_b1": {"new": x_floor(f1["b1"]["new"]["from_third_mean"], 1),
                                 "base": x_floor(f1["b1"]["base"]["from_third_mean"], 1)},
    },
    "topk_small8": {
        "what": "fp8s/: s39's wip/topk-small8 (the top-k's small path to 8,192 candidates; landed, c8d26df); "
                "off = DSV4_IX_SMALL=0 (the general path), same binary",
        "indexer_alone_us": {"new": indexer_tables(os.path.join(D, "fp8s", "attn-new.txt")),
                             "off": indexer_tables(os.path.join(D, "fp8s", "attn-off.txt"))},
        "phases_cycles": ix_phases(os.path.join(D, "fp8s", "ixtrace.txt")),
        "decode": {k: v for k, v in f1.items() if k.endswith("32k")},
    },
    "not_kept": {
        "scores_stages": {
            "what": "stages/ (stages.diff): k_idx_score_tc's keys through a ring of up to four staging slots (a "
                    "block's tiles in flight at once); one = DSV4_IX_STAGES=1, same binary. Even alone at 16-64 "
                    "tokens x 32k-128k, and 3 us slower a CSA layer at batch 1 in the step (the node table)",
            "indexer_alone_us": {"new": [indexer_tables(os.path.join(D, "stages", f"attn-new-{i}.txt"))
                                         for i in (1, 2)],
                                 "one": [indexer_tables(os.path.join(D, "stages", f"attn-one-{i}.txt"))
                                         for i in (1, 2)]},
            "decode": {k: v for k, v in rounds("stages").items() if k != "b1"},
        },
        "fp8s_issue_trim": {
            "what": "stages/ (fp8s-trim.diff): k_mma_fp8s's issue side without selects for whole tiles (~180 -> "
                    "~100 instructions a pair); new also carried the scores' stages (3 us a CSA layer slower); "
                    "base = 6bd09e3",
            "decode": {"b1": rounds("stages")["b1"]}, "node_table_b1": kt("stages"),
        },
        "moe_down_early": {
            "what": "early/ (early.diff): the M pack letting the down pass launch before it waits (down's blocks "
                    "under gate / up's second wave); noearly = DSV4_MOE_EARLY=0; nopf = early on, the next row "
                    "without L2 prefetch; base = 6bd09e3",
            "experts_alone_us": {"new": [experts_ref(os.path.join(D, "early", f"exp-new-{i}.txt")) for i in (1, 2)],
                                 "noearly": [experts_ref(os.path.join(D, "early", f"exp-noearly-{i}.txt"))
                                             for i in (1, 2)]},
            "decode": rounds("early"),
        },
        "fp8s_l2_256B": {
            "what": "early/ (l2pf.diff): k_mma_fp8s's weight copies with .L2::256B; nopf = DSV4_MMA_L2PF=0 "
                    "(with the early down pass in both)", "node_table_b1": kt("early"),
        },
        "fp8s_lo_skip": {
            "what": "loskip/ (loskip.diff): k_mma_fp8s leaving out a step's lo MMAs where every lo word is zero (a "
                    "warp vote); base = 6bd09e3", "decode": rounds("loskip"), "node_table_b1": kt("loskip"),
        },
    },
    "head": head(os.path.join(D, "loskip"), "the head's figures at 6bd09e3 (the session's landed code): "
                 "scripts/gpu_head.sh, one run each, no server (loskip/, after that call's A/B)"),
}
json.dump(res, sys.stdout, indent=1)
print()

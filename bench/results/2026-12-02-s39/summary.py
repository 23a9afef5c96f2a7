#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s39: v59) as one JSON:
    python3 bench/results/2026-12-02-s39/summary.py > bench/results/h200-2026-12-02-v59.json
Reads the calls' ab.txt (scripts/gpu_ab.sh; bench_cpu's mean from the third step), k_idx_topk's phase lines
(a -DIX_TRACE build) and bench_kernels' indexer tables; standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, indexer_tables, ix_phases, x_floor  # noqa: E402


def rounds(call, ctx=True):
    """A call's ab.txt from the third step (ctx: the context part of the case, b1-4k)."""
    return call_rounds(D, call, ctx=ctx)


def tables(call, tag):
    """bench_kernels' indexer tables of a call's two rounds (attn-TAG-1.txt, attn-TAG-2.txt)."""
    return [indexer_tables(os.path.join(D, call, f"attn-{tag}-{i}.txt")) for i in (1, 2)]


s2 = rounds("small2")
res = {
    "source": "bench/results/2026-12-02-s39",
    "device": "NVIDIA H200 (sm_90)",
    "what": "8 Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64 --overlap [--context C], "
            "ms a step from the third step, 3 rounds alternating in one call",
    "topk_small_path": {
        "what": "k_idx_topk's path for up to 4,096 candidates (landed: small2/, four keys a thread on 8 / 16 / 32 "
                "warps; small/: the first version, 4 / 8 / 16 keys a thread on 8 warps); off = DSV4_IX_SMALL=0, "
                "the general path, same binary",
        "phases_cycles_landed": ix_phases(os.path.join(D, "small2", "ixtrace.txt")),
        "phases_cycles_first_version": ix_phases(os.path.join(D, "small", "ixtrace.txt")),
        "indexer_alone_us": {"new": tables("small2", "new"), "off": tables("small2", "off")},
        "decode": s2,
        "decode_first_version": rounds("small"),
        "per_layer_x_floor_b1_4k": {"new": x_floor(s2["b1-4k"]["new"]["from_third_mean"], 1),
                                    "off": x_floor(s2["b1-4k"]["off"]["from_third_mean"], 1)},
    },
    "scores_staging": {
        "what": "stage/: k_idx_score_tc's dynamic shared memory by key format (three blocks an SM instead of two); "
                "base = a build of fb76ddb, one round",
        "indexer_alone_us": {"new": indexer_tables(os.path.join(D, "stage", "attn-new-1.txt")),
                             "base": indexer_tables(os.path.join(D, "stage", "attn-base-1.txt"))},
        "decode": rounds("stage"),
    },
    "not_kept": {
        "hc_post_mix1": {"what": "wip/hc-post-mix1: hc_post making the next hc_pre's mixing parts at k_hc_mix's "
                                 "partition; off = DSV4_HC_FUSE=0 (main's path)", "decode": rounds("hcmix1")},
        "topk_phase1": {"what": "wip/topk-phase1 (on 37fa3ac): the keys-and-bounds phase by selects; base = a main "
                                "build", "decode": rounds("phase1"),
                        "phases_cycles": ix_phases(os.path.join(D, "phase1", "ixtrace.txt"))},
        "queue_priorities": {"what": "DSV4_QUEUE_PRIO=1 (p1: the main queue first) / 2 (p2: the side queue first) "
                                     "against none (new); prio.diff", "decode": rounds("prio")},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, v42) as one JSON:
    python3 bench/results/2026-12-01-s22/summary.py > bench/results/h200-2026-12-01-v42.json
Reads the calls' summary.txt lines (bench_cpu's model line, abbreviated by each run.sh), bench_kernels'
attention JSON and dsv4 bench's JSON; standard library only. Rooflines as summary_lib's (the per-layer
weight-bytes floor)."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import ab as summary_lib_ab, head, pick, values  # noqa: E402


def indexer_rows(call, name):
    rs = json.load(open(os.path.join(D, call, name)))["results"]
    return [r for r in rs if r.get("kind", "").startswith("indexer")]


def ab(call, cases, ctx=True):
    return summary_lib_ab(os.path.join(D, call, "summary.txt"), cases, ctx)


def ablation():
    out = {}
    for line in open(os.path.join(D, "ablate", "summary.txt")):
        m = re.match(r"b(\d+)-\S+ \[(.*)\]: rc=(\d+)(?: 32 steps: ([\d.]+) ms/step)?", line)
        if m:
            out.setdefault(f"batch {m.group(1)}", []).append(
                {"left_out": m.group(2), "ms_per_step": float(m.group(4)) if m.group(4) else None,
                 "rc": int(m.group(3))})
    return out


res = {
    "source": "bench/results/2026-12-01-s22",
    "device": "NVIDIA H200 (sm_90)",
    "indexer_fp4_table": {
        "what": "025ca55: the indexer's FP4 keys converted by the experts' byte-table decoder (the same BF16 "
                "values), against e3d8dfa (*.base) in the same call; logits identical, the suite passes",
        "indexer_command": "bench_kernels --attn-only --batch 1,16,64",
        "indexer_new": indexer_rows("ix-fp4-table", "attn-bench_kernels.json"),
        "indexer_base": indexer_rows("ix-fp4-table", "attn-bench_kernels.base.json"),
        "decode_ms": ab("ix-fp4-table", ((1, 131072), (16, 131072), (64, 32768))),
    },
    "wg8_parts8": {
        "what": "6c782bc: k_wg8's parts along K at least 8 groups each, against 025ca55 (*.base) in the same call; "
                "the suite passes (other sums for wq_a, wkv, the shared expert, the indexer's wq_b)",
        "decode_ms": ab("wg8-parts8", ((1, 0), (16, 0)), ctx=False),
        "linears_command": "bench_kernels --linear-only --batch 1 (lin-bench_kernels*.txt: the 'ref us' column)",
    },
    "head_025ca55": head(os.path.join(D, "closing"),
                         "the head's device code (ca2d61d: 025ca55's kernels), two runs each, and a 4,096-token prefill"),
    "not_kept": {
        "ablation": {"what": "wip/ablate (ablate.diff): decode steps with one kind of kernel left out "
                             "(DSV4_ABLATE; wrong results, rc 1 where the logits turned NaN); batch 16 "
                             "figures below the router are not comparable (the routing changes)",
                     "runs": ablation()},
        "indexer_ring": {"what": "ix-ring.diff: the indexer's scores with a 7-deep ring of FP4 key tiles and a "
                                 "token's every Y-th tile a block, against 025ca55",
                         "indexer_new": indexer_rows("ix-ring", "attn-bench_kernels.json"),
                         "indexer_base": indexer_rows("ix-ring", "attn-bench_kernels.base.json"),
                         "decode_ms": ab("ix-ring", ((1, 131072), (16, 131072), (64, 32768), (64, 131072)))},
        "wg8_parts_cap": {"what": "wg8-maxp.diff: k_wg8's parts along K capped (DSV4_WG8_MAXP)",
                          "decode_ms": {f"batch {b}": {f"cap {p}": pick(values(os.path.join(D, "wg8-maxp", "summary.txt")),
                                                                          rf"b{b}-p{p}-\d") for p in (8, 4, 2)}
                                        for b in (1, 16, 64)}},
        "fp8s_scales_early": {"what": "fp8s-xs.diff: k_mma_fp8s loading a step's activation scales at its top",
                              "decode_ms": ab("fp8s-xs", ((1, 0), (16, 0), (64, 0)), ctx=False)},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

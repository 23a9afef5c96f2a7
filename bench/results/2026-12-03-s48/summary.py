#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-03, s48: v67) as one JSON:
    python3 bench/results/2026-12-03-s48/summary.py > bench/results/h200-2026-12-03-v67.json
Reads the decode A/Bs of first/, stripe/ and bound/ and the indexer tables of cltrace/, stripe/ and bound/;
standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, indexer_all, table_rounds  # noqa: E402


print(json.dumps({
    "version": "v67",
    "machine": "one NVIDIA H200 per call",
    "kernels_command": "bench_kernels --attn-only --batch 1,16 (us a call: the indexer's scores + top-k); "
                       "DSV4_IX_CL=0 one block a token, 8 / 4 / 2 a cluster of that size for every token past the "
                       "small path",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B [--context C] "
                      "[--max-context X]",
    "v66_verified": {
        "what": "bc986a4 (v66) with the cluster (new) against DSV4_IX_CL=0 (one), the same binary, one round; "
                "memcheck of k_idx_topk<CL> 0 errors and the whole suite passed in the same call",
        "decode_ms": call_rounds(D, "first"),
    },
    "cluster_sizes_before": {
        "what": "v66's top-k, the cluster off (cl0) and forced at 8 / 4 / 2 (cl8, cl4, cl2), two rounds",
        "indexer_us": table_rounds(D, "cltrace", indexer_all),
    },
    "stripes": {
        "what": "the pass sums by stripes (new) against v66 (base), the cluster off / forced, two rounds; decode "
                "forced at 8 (cl8) against off, the same binary",
        "indexer_us": table_rounds(D, "stripe", indexer_all),
        "decode_ms": call_rounds(D, "stripe"),
    },
    "kept": {
        "what": "stripes + the k-th's bound from groups of threads + no 64-bit divisions (new) against v66 (base), "
                "the cluster off / forced at 8, one round; decode forced at 8 (cl8) against off, and at 1 x ~1M "
                "new / base",
        "indexer_us": table_rounds(D, "bound", indexer_all),
        "decode_ms": call_rounds(D, "bound"),
    },
}, indent=1))

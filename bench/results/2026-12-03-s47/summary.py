#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-03, s47: v66) as one JSON:
    python3 bench/results/2026-12-03-s47/summary.py > bench/results/h200-2026-12-03-v66.json
Reads the attention tables and decode A/Bs of pair/, and the indexer tables and decode A/Bs of topk-cl/ and
topk-cl2/; standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import attn, call_rounds, indexer_all, table_rounds  # noqa: E402


print(json.dumps({
    "version": "v66",
    "machine": "one NVIDIA H200 per call",
    "kernels_command": "bench_kernels --attn-only --batch 1,16[,64] (us a call)",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B [--context C] "
                      "[--max-context X]",
    "pair_not_kept": {
        "what": "q in pair rows for k_attn_qk / k_attn_one (new, pair.diff) against b92ec8c (base)",
        "attention_us": table_rounds(D, "pair", attn),
        "decode_ms": call_rounds(D, "pair"),
    },
    "topk_cluster_first": {
        "what": "the top-k as a cluster of 8/4/2 blocks a token for every token past the small path (cl) against "
                "one block a token (one: DSV4_IX_CL=0, the same binary); decode: new / one",
        "indexer_us": table_rounds(D, "topk-cl", indexer_all),
        "decode_ms": call_rounds(D, "topk-cl"),
    },
    "topk_cluster_kept": {
        "what": "the cluster for tokens past 49,152 candidates only (cl / new) against one block a token (one: "
                "DSV4_IX_CL=0, the same binary), one round",
        "indexer_us": table_rounds(D, "topk-cl2", indexer_all),
        "decode_ms": call_rounds(D, "topk-cl2"),
    },
}, indent=1))

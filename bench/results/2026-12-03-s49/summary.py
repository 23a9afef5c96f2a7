#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-03, s49: v68) as one JSON:
    python3 bench/results/2026-12-03-s49/summary.py > bench/results/h200-2026-12-03-v68.json
Reads the decode A/Bs of decode/, one8/, one8b/ and one8c/ and the attention tables of verify/, one8/, one8b/
and one8c/; standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import attn, call_rounds, indexer_all, table_rounds, x_floor  # noqa: E402

kept = call_rounds(D, "one8c")
print(json.dumps({
    "version": "v68",
    "machine": "one NVIDIA H200 per call",
    "kernels_command": "bench_kernels --attn-only --batch 1,16 | 1,2 (us a call: the attention, and the indexer's "
                       "scores + top-k)",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B [--context C]",
    "v68_verified": "the whole suite (scripts/gpu_verify.sh) on 7038438 (v68 as committed, one8 at 1 token): every "
                    "test, 9 memchecks 0 errors, logits identical to 557a942's (final/)",
    "v67_verified": "the whole suite (scripts/gpu_verify.sh) on 557a942 (v67) with div64 applied: every test, 9 "
                    "memchecks 0 errors, logits identical to 557a942's (verify/)",
    "div64_dropped": {
        "what": "the index-to-row paths' 64-bit divisions in 32 bits where the values fit (s48's div64.diff, new) "
                "against 557a942 (base): the attention and indexer alone two rounds, decode two rounds; slower or "
                "even, not kept",
        "attn_us": table_rounds(D, "verify", attn),
        "indexer_us": table_rounds(D, "verify", indexer_all),
        "decode_ms": call_rounds(D, "decode"),
    },
    "one8_first": {
        "what": "k_attn_one with 8 heads a block everywhere (tune's one8, DSV4_TUNE=one8/one8.json) against one "
                "(16), the same binary, three rounds",
        "attn_us": table_rounds(D, "one8", attn),
        "decode_ms": call_rounds(D, "one8"),
    },
    "one8_rule": {
        "what": "8 heads a block only where a part has at most 64 rows, one8 at 1 token in the built-in table, "
                "heads a block passed at run time (new) against 557a942 (base), three rounds",
        "attn_us": table_rounds(D, "one8b", attn),
        "decode_ms": call_rounds(D, "one8b"),
    },
    "csa_8_heads_traced": {
        "what": "k_attn_one's cycles after the PDL wait (thread 0, token 0's first head group, the largest part, "
                "medians over 27 calls; python3 bench/af_trace.py trace/trace-<8|16>.txt.gz), CSA 640 rows at 1 "
                "token x 4k with 8 heads a block (DSV4_ATTN_ONE8_ROWS=96) and 16 (=1), and the same build alone",
        "after_wait_cycles": {"8": 17560, "16": 19290},
        "combine_cycles": {"8": [1599, 1796], "16": [2941, 3247]},
        "attn_us": {"8": attn(os.path.join(D, "trace", "attn-8.txt")),
                    "16": attn(os.path.join(D, "trace", "attn-16.txt"))},
    },
    "kept": {
        "what": "one8b's with the heads a block a template argument (the 16-head kernels' SASS the same as "
                "557a942's) against 557a942 (base), three rounds; logits identical, test_ops_cuda passed, memcheck "
                "of k_attn_one 0 errors",
        "attn_us": table_rounds(D, "one8c", attn),
        "decode_ms": kept,
        "batch1_x_floor": {v: x_floor(kept["b1"][v]["from_third_mean"], 1) for v in ("new", "base")},
    },
}, indent=1))

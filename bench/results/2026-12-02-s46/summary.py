#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s46: v65) as one JSON:
    python3 bench/results/2026-12-02-s46/summary.py > bench/results/h200-2026-12-02-v65.json
Reads the attention tables and decode A/Bs of epi/, the decode A/Bs of verify/ and fuse/, the warm cuBLASLt
prefills of verify/ and the serve runs of attn-src/; standard library only."""
import glob
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import attn, call_rounds, prefills, table_rounds  # noqa: E402


def attn_rounds(call):
    return table_rounds(D, call, attn)


def chunks():
    out = {}
    for f in sorted(glob.glob(os.path.join(D, "attn-src", "long-ch*.json"))):
        r = json.load(open(f))["results"][0]
        q = {}
        for k in ("ttft_ms", "tpot_ms", "itl_ms"):
            for p in ("p50", "p99"):
                q[f"{k}_{p}"] = round(r[k][p], 2)
        q["completed"], q["output_tok_s"] = r["completed"], round(r["output_token_throughput"], 1)
        out["chunk_" + os.path.basename(f)[7:-5]] = q
    return out


print(json.dumps({
    "version": "v65",
    "machine": "one NVIDIA H200 per call",
    "attention_command": "bench_kernels --attn-only --batch 1,16,64 (us a call), new (fc8c2dc) and base (9b93896) "
                         "alternating, two rounds",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B [--context C]",
    "attention_us": {"what": "k_attn_pvw's epilogue through shared memory + k_attn_md16's scores in registers "
                             "(new) against 9b93896 (base)", "rows": attn_rounds("epi")},
    "attention_us_lds": {"what": "the same and the scores' row tiles chosen by a select (e762394, new) against "
                                 "9b93896 (base)", "rows": attn_rounds("lds")},
    "decode_ab": {
        "epi": {"what": "the same change (new) against 9b93896 (base)", "ms": call_rounds(D, "epi")},
        "lds": {"what": "e762394 (new) against 9b93896 (base)", "ms": call_rounds(D, "lds")},
        "verify": {"what": "9b93896 (new) against c3dcefa (base)", "ms": call_rounds(D, "verify")},
        "fuse": {"what": "k_wg8 packing its own real tokens' codes (new, not kept) / DSV4_WG8_FUSE=0 (off) / "
                         "9b93896 (base)", "ms": call_rounds(D, "fuse")},
    },
    "prefill_4096_warm_cublaslt": {"what": "9b93896 (lt-new) against c3dcefa (lt-base), --prefill-gemm cublaslt",
                                   "runs": prefills(os.path.join(D, "verify"))},
    "serve_4000_token_prompts_concurrency_4": {"what": "dsv4 serve, 8 Flash layers, 8 prompts of 4,000 tokens, 32 "
                                                       "out, by --chunked-prefill-size", "runs": chunks()},
}, indent=1))

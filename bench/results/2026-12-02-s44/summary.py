#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s44: v64) as one JSON:
    python3 bench/results/2026-12-02-s44/summary.py > bench/results/h200-2026-12-02-v64.json
Reads the warm 4,096-token prefills (combo/, wga/, pipe/), the decode A/Bs (combo/, fuse/) and the head call's
printed figures (head/out.txt); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, prefills  # noqa: E402


def head():
    dec, pf, serve = {}, {}, []
    for line in open(os.path.join(D, "head", "out.txt")):
        m = re.match(r"(d\d+-c\d+)-\d+: .*?([\d.]+) ms/step from the third", line)
        if m:
            dec.setdefault(m.group(1), []).append(float(m.group(2)))
        m = re.match(r"(pf(?:-lt)?)-\d+: 4096 tokens each: ([\d.]+) tok/s", line)
        if m:
            pf.setdefault("cublaslt" if m.group(1) == "pf-lt" else "ours", []).append(float(m.group(2)))
        f = line.split()
        if len(f) > 20 and f[0].isdigit() and "|" in f:
            serve.append({"concurrency": int(f[0]), "ok": int(f[1]), "fail": int(f[2]), "out_tok_s": float(f[5]),
                          "ttft_ms_p50": float(f[8]), "tpot_ms_p50": float(f[14]), "itl_ms_p99": float(f[24])})
    names = ["16-token prompts"] * 4 + ["4,000-token prompts, ours"] * 2 + ["4,000-token prompts, cublaslt"] * 2
    for s, n in zip(serve, names):
        s["prompts"] = n
    return {"decode_ms_from_third": dec, "prefill_4096_warm_tok_s": pf, "serve": serve}


cmd = ("bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics reference "
       "--fill-random --prompt 4096 --decode 2 --warm-prefill [--prefill-gemm cublaslt]")
print(json.dumps({
    "version": "v64",
    "machine": "one NVIDIA H200 per call",
    "prefill_command": cmd,
    "decode_command": "bench_cpu -m <the same> --backend cuda --numerics reference --fill-random --prompt 16 "
                      "--decode 64 --overlap --batch B [--context C]",
    "head_c3dcefa": head(),
    "prefill_4096_warm": {
        "combo": {"what": "wip/kv-store + wip/lt-bf16 merged (new) against c3dcefa (base); new-lt-nobf16: "
                          "DSV4_LT_BF16=0", "runs": prefills(os.path.join(D, "combo"))},
        "wga": {"what": "k_moe_wga (new, not kept) against k_moe_wg (wg: DSV4_MOE_WGA=0) and c3dcefa (base)",
                "runs": prefills(os.path.join(D, "wga"))},
        "pipe": {"what": "k_moe_wg's units two in flight (new, not kept) against DSV4_MOE_WG_PIPE=0 and c3dcefa; "
                         "new-wgs2: DSV4_MOE_WGS=2", "runs": prefills(os.path.join(D, "pipe"))},
    },
    "decode_ab": {
        "combo": {"what": "kv-store + lt-bf16 (b1, b16) against c3dcefa", "ms": call_rounds(D, "combo")},
        "fuse": {"what": "k_wg8 packing its own codes (not kept) / DSV4_WG8_FUSE=0 (off) / c3dcefa (base)",
                 "ms": call_rounds(D, "fuse")},
    },
}, indent=1))

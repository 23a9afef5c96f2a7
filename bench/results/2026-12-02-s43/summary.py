#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s43: v63) as one JSON:
    python3 bench/results/2026-12-02-s43/summary.py > bench/results/h200-2026-12-02-v63.json
Reads the warm 4,096-token prefills (warm/, ab2/, final/; cold ones from ltbf/), the decode A/Bs (ab2/, final/)
and lt.cu's error against wg8.cu after the scale-cache fix (ltfix/); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import prefills as lib_prefills  # noqa: E402



def prefills(call, pat):
    """pf-<name>[-<round>].txt -> name -> {ms: [...], tok_s: [...], mean_ms} (summary_lib.prefills)."""
    return lib_prefills(os.path.join(D, call), pat)


def decode(call):
    """ab.txt: name -> [ms a step from the third]."""
    out = {}
    for line in open(os.path.join(D, call, "ab.txt")):
        m = re.match(r"(\S+) \((\d+)\): .*?([\d.]+) ms/step from the third", line)
        if m:
            out.setdefault(m.group(1), []).append(float(m.group(3)))
    return out


def lt_err(path):
    out = {}
    for line in open(path):
        m = re.match(r"(.+?) \(FP8\)\s+(\d+)\s", line)
        c = re.search(r"cuBLASLt ([\d.]+) us, TFLOP/s \d+, max err vs wg8 ([\d.e+-]+)", line)
        if m and c:
            out.setdefault(m.group(1), {})["b" + m.group(2)] = {"cublaslt_us": float(c.group(1)),
                                                                "max_err_vs_wg8": float(c.group(2))}
    return out


cmd = ("bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics reference "
       "--fill-random --prompt 4096 --decode 2 --warm-prefill [--prefill-gemm cublaslt]")
print(json.dumps({
    "version": "v63",
    "machine": "one NVIDIA H200 per call",
    "prefill_command": cmd,
    "prefill_4096_warm_head": prefills("final", r"pf-(ours|cublaslt)\.txt"),
    "prefill_4096_warm_ab": {
        "what": "ab2/: ours with k_norm_rope_w / without (DSV4_NORM_ROPE_W=0); cuBLASLt with both changes / "
                "without wo_a's BF16 GEMM (DSV4_LT_WOA=0) / without k_norm_rope_w; 2 rounds alternating",
        "runs": prefills("ab2", r"pf-([a-z-]+)-\d\.txt"),
    },
    "prefill_4096_warm_before": prefills("warm", r"pf-(ours|lt)-\d\.txt"),
    "prefill_4096_cold": prefills("ltbf", r"pf-(ours|cublaslt)-\d\.txt"),
    "decode_ms_from_third": {
        "command": "bench_cpu -m <8 Flash layers> --backend cuda --numerics reference --fill-random --prompt 16 "
                   "--decode 64 --overlap --batch B",
        "ab2 (new: warp kernel for every norm_rope; nonrw: block kernel)": decode("ab2"),
        "final (new: the head; w: warp kernel forced)": decode("final"),
    },
    "lt_vs_wg8_after_fix": lt_err(os.path.join(D, "ltfix", "lin-main-1.txt")),
}, indent=1))

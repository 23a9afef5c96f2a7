#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s42: v62) as one JSON:
    python3 bench/results/2026-12-02-s42/summary.py > bench/results/h200-2026-12-02-v62.json
Reads verify-ct/'s decode A/B and indexer tables, the FP8 linears with their cuBLASLt column (lt/), PyTorch's
probe of the library (cublas/), the prefill A/B and the logits' distances (lt2/); standard library only."""
import json
import os
import re
import statistics
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, indexer_tables, x_floor  # noqa: E402


def lt_linears(path):
    """bench_kernels' FP8 rows: name -> bB -> {reference us (wg8.cu), cuBLASLt us (lt.cu), its max err vs wg8}."""
    out = {}
    for line in open(path):
        m = re.match(r"(.+?) \(FP8\)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+%\s+([\d.]+)", line)
        if not m:
            continue
        r = {"reference_us": float(m.group(3))}
        c = re.search(r"cuBLASLt ([\d.]+) us, TFLOP/s \d+, max err vs wg8 ([\d.e+-]+)", line)
        if c:
            r["cublaslt_us"], r["cublaslt_max_err_vs_wg8"] = float(c.group(1)), float(c.group(2))
        out.setdefault(m.group(1), {})["b" + m.group(2)] = r
    return out


def probe(path):
    """bench/cublaslt_probe.py's rows: name -> tokens -> {blockwise, tensorwise, bf16 us}."""
    out = {}
    for line in open(path):
        m = re.match(r"(\S+(?: \S+)?)\s+(\d+)\s+\d+\s+\d+\s+([\d.]+)\s+\d+\s+([\d.]+)\s+\d+\s+([\d.]+)", line)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = {"blockwise_us": float(m.group(3)),
                                                          "tensorwise_us": float(m.group(4)),
                                                          "bf16_us": float(m.group(5))}
    return out


def prefill(call):
    out = {}
    for f in sorted(os.listdir(os.path.join(D, call))):
        m = re.match(r"pf-(ours|cublaslt)-(\d+)-(\d+)\.txt", f)
        if not m:
            continue
        t = re.search(r"prefill \d+ tokens each: ([\d.]+) tok/s \(([\d.]+) ms\)", open(os.path.join(D, call, f)).read())
        if t:
            out.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(
                {"tok_s": float(t.group(1)), "ms": float(t.group(2))})
    for tok in out.values():
        for runs in tok.values():
            runs.append({"mean_ms": round(statistics.mean(r["ms"] for r in runs), 2)})
    return out


vc = call_rounds(D, "verify-ct", ctx=True)
res = {
    "source": "bench/results/2026-12-02-s42",
    "device": "NVIDIA H200 (sm_90)",
    "verify_ct": {
        "what": "s41's 1f1e3e3 and wip/ix-short (72bf130) against 584bcea: the whole suite passed; decode 8 "
                "Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64 --overlap [--context C], "
                "ms a step from the third, 2 rounds alternating; the indexer alone at DSV4_IXT_TMAX 8 / 16 / 32",
        "decode": vc,
        "per_layer_x_floor_b1": x_floor(vc["b1"]["new"]["from_third_mean"], 1),
        "indexer_alone_us": {t: indexer_tables(os.path.join(D, "verify-ct", f"attn-{t}-1.txt"))["indexer, FP4 keys"]
                             for t in ("t8", "t16", "t32")},
    },
    "prefill_gemm_cublaslt": {
        "what": "--prefill-gemm cublaslt (lt.cu): reference numerics' FP8 linears through cuBLASLt's block-scaled "
                "FP8 GEMM. Linears: bench_kernels --linear-only --batch 128,1024,4096 (us a call, the pack included, "
                "FP32 out); the library through PyTorch's torch._scaled_mm (BF16 out, one weight resident); prefill: "
                "bench_cpu --prompt N --decode 2 on 8 Flash-shaped layers, alternating",
        "linears": lt_linears(os.path.join(D, "lt", "lin-ours-1.txt")),
        "torch_scaled_mm": probe(os.path.join(D, "cublas", "probe.txt")),
        "prefill": prefill("lt2"),
        "logits_vs_default": open(os.path.join(D, "lt2", "logits.txt")).read().strip().splitlines(),
    },
}
json.dump(res, sys.stdout, indent=1)
print()

#!/usr/bin/env python3
"""This directory's figures (session of 2026-11-30, v35) as one JSON:
    python3 bench/results/2026-11-30-hc-walk/summary.py > bench/results/h200-2026-11-30-v35.json
Reads the calls' summary.txt lines (bench_cpu's model line, abbreviated by each run.sh) and the profiles;
standard library only. Per-layer rooflines: the weight bytes of a Flash layer at v22's measured 4,226 GB/s copy
(0.055 / 0.292 / 0.83 ms at batch 1 / 16 / 64), the LM head's 0.26 ms taken out of a step first."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import FLOOR, HEAD_MS, LAYERS, profile as _profile  # noqa: E402


def lines(call):
    out = {}
    for line in open(os.path.join(D, call, "summary.txt")):
        name, _, rest = line.partition(": ")
        e = {}
        m = re.search(r"4096 tokens each: ([\d.]+) tok/s \(([\d.]+) ms\)", rest)
        if m:
            e["prefill_4096_tok_s"], e["prefill_4096_ms"] = float(m.group(1)), float(m.group(2))
        elif "decode" not in rest or "4096" not in rest:
            m = re.search(r"([\d.]+) ms/step", rest)
            if m:
                e["decode_ms_per_step"] = float(m.group(1))
        if e:
            out[name.strip()] = e
    return out


def profile(call, name, section):
    return _profile(os.path.join(D, call, name), section)


def vals(d, prefix, key):
    return [v[key] for k, v in sorted(d.items()) if k.startswith(prefix) and key in v]


closing, suite = lines("closing"), lines("closing-suite")
res = {
    "source": "bench/results/2026-11-30-hc-walk",
    "device": "NVIDIA H200 (sm_90)",
    "model": "8 Flash-shaped layers (mkmodel --preset flash --sparse, --fill-random), reference numerics",
    "base": "253b76e (the session's first commit), bench_cpu.base in the same call",
    "prefill_4096_tok_s": {"head": vals(closing, "pf-new", "prefill_4096_tok_s"),
                           "base": vals(closing, "pf-base", "prefill_4096_tok_s")},
    "decode_ms_per_step": {
        f"batch_{b}": {"head": vals(closing, f"d{b}-new", "decode_ms_per_step"),
                       "base": vals(closing, f"d{b}-base", "decode_ms_per_step")} for b in (1, 16, 64)},
    "batch_64_prefill_kernels_from_64_tokens": {"head": vals(suite, "b64-new", "decode_ms_per_step"),
                                                "mma_sync_at_64": vals(suite, "b64-mma", "decode_ms_per_step")},
    "prefill_profile_ms": profile("closing", "pf-profile.txt", "prefill"),
    "decode_16_profile_ms": profile("closing", "d16-profile.txt", "decode"),
    "roofline": {"per_layer_floor_ms": FLOOR, "head_ms": HEAD_MS, "layers": LAYERS,
                 "tensor_core_rate_tflops_dense": 990},
}
best = {1: min(res["decode_ms_per_step"]["batch_1"]["head"]), 16: min(res["decode_ms_per_step"]["batch_16"]["head"]),
        64: min(res["batch_64_prefill_kernels_from_64_tokens"]["head"])}
res["x_floor_per_layer"] = {f"batch_{b}": round((ms - HEAD_MS) / LAYERS / FLOOR[b], 2) for b, ms in best.items()}
res["extrapolated_43_layers_ms_per_step"] = {f"batch_{b}": round((ms - HEAD_MS) / LAYERS * 43 + HEAD_MS, 2)
                                            for b, ms in best.items()}
print(json.dumps(res, indent=1))

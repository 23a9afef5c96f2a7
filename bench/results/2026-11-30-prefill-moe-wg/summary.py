#!/usr/bin/env python3
"""The v34 prefill figures of this directory's calls as one JSON (bench/results/h200-prefill-2026-11-30-v34.json):
    python3 bench/results/2026-11-30-prefill-moe-wg/summary.py > bench/results/h200-prefill-2026-11-30-v34.json
Reads bench_cpu's and bench_kernels' text outputs (closing/, wgf8/, stages/, wgs/); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import profile as _profile  # noqa: E402


def model_line(path):
    for line in open(path):
        if line.startswith("model "):
            m = re.search(r"prefill (\d+) tokens each: ([\d.]+) tok/s \(([\d.]+) ms\)", line)
            d = re.search(r"decode \d+ steps: ([\d.]+) ms/step", line)
            return {"prefill_tokens": int(m.group(1)), "tok_s": float(m.group(2)), "ms": float(m.group(3)),
                    "decode_ms_per_step": float(d.group(1)) if d else None}
    return None


def profile(path):
    return _profile(path, "prefill")


def kernels(path):
    out = {}
    for line in open(path):
        m = re.match(r"(\S.*?\))\s+(\d+)\s+[\d.]+\s+([\d.]+)\s+\d+\s+\d+%\s+([\d.]+)", line)
        if m and int(m.group(2)) > 64:
            out.setdefault(m.group(1), {})[m.group(2)] = {"us": float(m.group(3)), "ref_us": float(m.group(4))}
    return out


def p(*a):
    return os.path.join(D, *a)


res = {
    "source": "bench/results/2026-11-30-prefill-moe-wg",
    "device": "NVIDIA H200 (sm_90)",
    "model": "8 Flash-shaped layers (mkmodel --preset flash --sparse, --fill-random), reference numerics",
    "tensor_core_rate_tflops_dense": 990,
    "prefill_4096": {
        "head_6f4326d": model_line(p("closing", "pf-new.txt")),
        "base_9afecb3": model_line(p("closing", "pf-base.txt")),
        "v33_base_in_first_call": [model_line(p("first", f"pf-base-{i}.txt")) for i in (1, 2)],
        "wgf8_step": [model_line(p("wgf8", f"pf-new-{i}.txt")) for i in (1, 2)],
        "wgf8_step_base": [model_line(p("wgf8", f"pf-base-{i}.txt")) for i in (1, 2)],
        "plain": {"new": model_line(p("wgf8", "pf-plain-new.txt")), "base": model_line(p("wgf8", "pf-plain-base.txt"))},
        "ring_stages": {s: model_line(p("stages", f"pf-s{s}.txt")) for s in ("2", "3", "4")},
        "profile_ms": profile(p("closing", "pf-profile.txt")),
    },
    "decode_ms_per_step": {
        f"b{b}": {"new": model_line(p("closing", f"d{b}-new.txt"))["decode_ms_per_step"],
                  "base": model_line(p("closing", f"d{b}-base.txt"))["decode_ms_per_step"]} for b in (1, 16, 64)
    },
    "kernels_us_at_batch": {"new": kernels(p("wgf8", "gemm-x.txt")), "DSV4_WGF8=0_DSV4_WGBF=0": kernels(p("wgf8", "gemm-0.txt"))},
    "command": "sh .gpu/<call>.sh per directory (its run.sh); bench_cpu --prompt 4096 --decode 2 --backend cuda --numerics reference --fill-random",
}
json.dump(res, sys.stdout, indent=1)
print()

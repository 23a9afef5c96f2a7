#!/usr/bin/env python3
"""This directory's figures (session of 2026-11-30, v36) as one JSON:
    python3 bench/results/2026-11-30-s17/summary.py > bench/results/h200-2026-11-30-v36.json
Reads the calls' summary.txt lines (bench_cpu's model line, abbreviated by each run.sh), bench_kernels' expert
rows and the batch-16 profile; standard library only. Per-layer rooflines: the weight bytes of a Flash layer at
v22's measured 4,226 GB/s copy (0.055 / 0.292 / 0.83 ms at batch 1 / 16 / 64), the LM head's 0.26 ms taken out
of a step first."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import FLOOR, HEAD_MS, LAYERS, profile as _profile, rows as _rows, experts as _experts  # noqa: E402


def steps(call):
    return {name: {kind: v} for name, kind, v in _rows(os.path.join(D, call, "summary.txt"))}


def experts(call, build):
    return _experts(os.path.join(D, call, f"bk-{build}.txt"), r"ref\.").get("ref.", {})


def vals(d, prefix, key="decode_ms_per_step"):
    return [v[key] for k, v in sorted(d.items()) if k.startswith(prefix) and key in v]


def profile(call, name, section):
    return _profile(os.path.join(D, call, name), section)


fin, clo, rows = steps("moe16-final"), steps("closing"), steps("moe16-rows")
res = {
    "source": "bench/results/2026-11-30-s17",
    "device": "NVIDIA H200 (sm_90)",
    "model": "8 Flash-shaped layers (mkmodel --preset flash --sparse, --fill-random), reference numerics",
    "head": "5c5f4ff; base 874ac0c (bench_cpu.base / bench_kernels.base in the same call, moe16-final/)",
    "decode_ms_per_step": {f"batch_{b}": {"head": vals(fin, f"b{b}-new"), "base": vals(fin, f"b{b}-base")}
                           for b in (1, 8, 16, 64)},
    # closing/: its base build is 5c5f4ff (the head's code); its new one a prologue change not kept
    "decode_ms_per_step_closing_call": {f"batch_{b}": vals(clo, f"b{b}-base") for b in (1, 16, 64)},
    # moe16-rows/: its base build is 5c5f4ff too; its new one blocks of several row blocks, not kept
    "decode_ms_per_step_rows_call": {f"batch_{b}": {"head": vals(rows, f"b{b}-base"),
                                                    "several_row_blocks": vals(rows, f"b{b}-new")} for b in (1, 16, 64)},
    "prefill_4096_tok_s_closing_call": {"head": vals(clo, "pf-base", "prefill_4096_tok_s"),
                                        "prologue_variant": vals(clo, "pf-new", "prefill_4096_tok_s")},
    "routed_experts_reference": {"head": experts("moe16-final", "new"), "base": experts("moe16-final", "base")},
    "decode_16_profile_ms": profile("closing", "d16-profile.txt", "decode"),
    "roofline": {"per_layer_floor_ms": FLOOR, "head_ms": HEAD_MS, "layers": LAYERS},
}
best = {b: min(res["decode_ms_per_step"][f"batch_{b}"]["head"] + res["decode_ms_per_step_closing_call"][f"batch_{b}"]
               + res["decode_ms_per_step_rows_call"][f"batch_{b}"]["head"]) for b in (1, 16, 64)}
res["x_floor_per_layer"] = {f"batch_{b}": round((ms - HEAD_MS) / LAYERS / FLOOR[b], 2) for b, ms in best.items()}
res["extrapolated_43_layers_ms_per_step"] = {f"batch_{b}": round((ms - HEAD_MS) / LAYERS * 43 + HEAD_MS, 2)
                                            for b, ms in best.items()}
print(json.dumps(res, indent=1))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-11-30, v37) as one JSON:
    python3 bench/results/2026-11-30-s18/summary.py > bench/results/h200-2026-11-30-v37.json
Reads the calls' summary.txt lines (bench_cpu's model line, abbreviated by each run.sh), bench_kernels' expert
rows and dsv4 bench's JSON; standard library only. Per-layer rooflines as v36's: the weight bytes of a Flash
layer at v22's measured 4,226 GB/s copy (0.055 / 0.292 / 0.83 ms at batch 1 / 16 / 64), the LM head's 0.26 ms
taken out of a step first."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import FLOOR, HEAD_MS, LAYERS, pick, values, experts as _experts, serve as _serve  # noqa: E402


def lines(call):
    return values(os.path.join(D, call, "summary.txt"))


def experts(path):
    return _experts(os.path.join(D, path))


def serve(call):
    return _serve(os.path.join(D, call))


il, clo, sc, ver = lines("interleave"), lines("closing"), lines("scales"), lines("verify")
bf = lines("bf16-one")
res = {
    "source": "bench/results/2026-11-30-s18",
    "device": "NVIDIA H200 (sm_90)",
    "model": "8 Flash-shaped layers (mkmodel --preset flash --sparse, --fill-random), reference numerics",
    "head": "aa06163 (interleave/: base e0a1aa9 in the same call; closing/: the head's code alone); 21c635c (bf16-one/: base aa06163)",
    "decode_ms_per_step": {f"batch_{b}": {"head": pick(il, rf"b{b}-new-\d"), "base_e0a1aa9": pick(il, rf"b{b}-base-\d"),
                                           "closing_call": pick(clo, rf"d{b}-\d")} for b in (1, 8, 16, 64)},
    "prefill_4096_tok_s": {"head": pick(il, r"pf-new-\d"), "base_e0a1aa9": pick(il, r"pf-base-\d"),
                           "closing_call": pick(clo, r"pf-\d")},
    "scales_table_call": {f"batch_{b}": {"e0a1aa9": pick(sc, rf"b{b}-v1-\d"), "base_7947823": pick(sc, rf"b{b}-base-\d"),
                                         "unrolled_not_kept": pick(sc, rf"b{b}-v2-\d")} for b in (1, 16, 64)},
    "bf16_one_part_call": {f"batch_{b}": {"head_21c635c": pick(bf, rf"b{b}-new-\d"), "base_aa06163": pick(bf, rf"b{b}-base-\d")}
                           for b in (1, 16, 64)},
    "lm_head_reference_us": {"batch_16": {"base": 356.54, "one_part": 289.39}, "batch_64": {"base": 537.79, "one_part": 416.28},
                             "source": "bf16-one/bk-*.txt, the ref column"},
    "routed_experts": {"head": experts("interleave/bk-new-1.txt"), "base_e0a1aa9": experts("interleave/bk-base-1.txt")},
    "serve_concurrency": {"head": serve("closing"), "before_7947823": serve("verify")},
    "roofline": {"per_layer_floor_ms": FLOOR, "head_ms": HEAD_MS, "layers": LAYERS},
}
best = {b: min(res["decode_ms_per_step"][f"batch_{b}"]["head"] + res["decode_ms_per_step"][f"batch_{b}"]["closing_call"]
            + res["bf16_one_part_call"][f"batch_{b}"]["head_21c635c"]) for b in (1, 16, 64)}
res["best_ms_per_step"] = {f"batch_{b}": v for b, v in best.items()}
res["x_floor_per_layer"] = {f"batch_{b}": round((ms - HEAD_MS) / LAYERS / FLOOR[b], 2) for b, ms in best.items()}
print(json.dumps(res, indent=1))

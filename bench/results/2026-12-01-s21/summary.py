#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, v40) as one JSON:
    python3 bench/results/2026-12-01-s21/summary.py > bench/results/h200-2026-12-01-v40.json
Reads the calls' summary.txt lines (bench_cpu's model line, abbreviated by each run.sh) and bench_kernels'
attention JSON; standard library only. Rooflines as summary_lib's (the per-layer weight-bytes floor)."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import ab as summary_lib_ab, pick, values, x_floor  # noqa: E402

rows16 = values(os.path.join(D, "bf16-rows", "summary.txt"))
decode = {}
for b, c in ((1, 0), (16, 0), (64, 0), (16, 32768), (16, 131072), (64, 32768)):
    bf, f32 = pick(rows16, rf"b{b}-c{c}-bf16-\d"), pick(rows16, rf"b{b}-c{c}-f32-\d")
    decode[f"batch {b}, context {c or 16}"] = {
        "bf16_rows_ms": bf, "fp32_rows_ms": f32,
        "change": round(sum(bf) / sum(f32) - 1, 4),
        "x_floor_bf16_min": x_floor(min(bf), b) if c == 0 else None}
kern = json.load(open(os.path.join(D, "bf16-rows", "attn.json")))["results"]
attn = [r for r in kern if r.get("kind") == "attention"]
copy_gbs = [r["gb_s"] for r in kern if r.get("kind") == "copy"][0]
def kern_of(call, name):
    return json.load(open(os.path.join(D, call, name)))["results"]


def ab(call, cases, ctx=True):
    return summary_lib_ab(os.path.join(D, call, "summary.txt"), cases, ctx)


res = {
    "source": "bench/results/2026-12-01-s21",
    "device": "NVIDIA H200 (sm_90)",
    "bf16_rows": {
        "what": "the CUDA backend caches reference numerics' rows as BF16 (dsv4_kv.bf16_rows): window ring, "
                "compressed rows, indexer keys where not FP4; logits identical to FP32 rows (DSV4_KV_BF16=0) on a "
                "2-layer Flash-shaped checkpoint, prefill and decode, both numerics; the suite passes",
        "decode_command": "bench_cpu -m <8 Flash layers, mkmodel --preset flash --sparse> --backend cuda --fill-random "
                          "--numerics reference --prompt 16 --decode 32 --batch B [--context C]; FP32 rows: "
                          "DSV4_KV_BF16=0, alternating, two rounds",
        "decode": decode,
        "attention_command": "bench_kernels --attn-only --batch 1,16,64 (us: BF16 rows; f32_rows_us: the same "
                             "kernels on FP32 rows; fp32_us: plain numerics' FP32 kernels; naive_us: the first "
                             "layout; bytes and of_copy on the BF16 rows)",
        "copy_gb_s": copy_gbs,
        "attention": attn,
        "page_kib_8_layers": {"bf16_rows": 210.8, "fp32_rows": 408.8},
    },
    "indexer_v41": {
        "what": "2cd4158: the indexer's tensor-core scores kernel templated on 128-wide keys (no integer divisions) "
                "and its epilogue's BF16 roundings paired (F2FP), against c4b5434 (*.base) in the same call; "
                "logits identical, the suite passes",
        "indexer_command": "bench_kernels --attn-only --batch 1,16,64 (the indexer tables: FP32-row keys and FP4 keys)",
        "indexer_new": [r for r in kern_of("ix-tc", "attn-bench_kernels.json") if r.get("kind", "").startswith("indexer")],
        "indexer_base": [r for r in kern_of("ix-tc", "attn-bench_kernels.base.json")
                         if r.get("kind", "").startswith("indexer")],
        "decode_ms": ab("ix-tc", ((1, 131072), (16, 131072), (64, 32768))),
    },
    "head_2cd4158": {
        "what": "the head's decode steps (qk-hd/'s base runs, alternating with a build not kept)",
        "decode_ms": {f"batch {b}, context {c or 16}": pick(values(os.path.join(D, "qk-hd", "summary.txt")),
                                                             rf"b{b}-c{c}-base-\d")
                      for b, c in ((1, 0), (16, 0), (64, 0), (16, 131072))},
        "x_floor_min": {b: x_floor(min(pick(values(os.path.join(D, "qk-hd", "summary.txt")), rf"b{b}-c0-base-\d")), b)
                        for b in (1, 16, 64)},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s54: what bounds the routed experts at one token, measured
with bench/stream_probe.cu; the shared expert's k_wg8 rings beside them) as one JSON:
    python3 bench/results/2026-12-04-s54/summary.py > bench/results/h200-2026-12-04-s54.json
Reads probe2/'s probe table and experts rows, the decode A/Bs of side/, side2/, rp2/, final/, cmp/ and pair/, the
bits checks of side2/, cmp/ and the suites of verify/ and pair/, final/'s prefills, the first top-k layer's FFN
in the node traces of side/ and rp2/, and the steps' compressors in those of final/, cmp/ and pair/; standard
library only."""
import csv
import gzip
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, experts_ref, ffn, prefills, x_floor  # noqa: E402


def probe(path):
    """stream_probe's output: the empty kernel's us, the plain reads (MB -> us), the ring rows."""
    out = {"empty_kernel_us": None, "ldg": [], "ring": []}
    for ln in open(path):
        m = re.match(r"empty kernel between the events: ([\d.]+) us", ln)
        if m:
            out["empty_kernel_us"] = float(m.group(1))
        m = re.match(r"ldg\s+([\d.]+) MB: ([\d.]+) us, (\d+) GB/s", ln)
        if m:
            out["ldg"].append({"MB": float(m.group(1)), "us": float(m.group(2)), "GBps": int(m.group(3))})
        m = re.match(r"(moe|contig)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)", ln)
        if m:
            out["ring"].append({"pattern": m.group(1), "stages": int(m.group(2)), "fma_a_group": int(m.group(3)),
                                "row_blocks_an_expert": int(m.group(4)), "blocks": int(m.group(5)),
                                "blocks_an_sm": int(m.group(6)), "MB": float(m.group(7)), "us": float(m.group(8)),
                                "GBps": int(m.group(9))})
    return out


def lines(call, name):
    p = os.path.join(D, call, name)
    return [ln.strip() for ln in open(p)] if os.path.exists(p) else []


def floors(rounds):
    """A call's new and base decode against the per-layer floor at batch 1, 16 and 64."""
    return {f"b{b}": {v: x_floor(rounds[f"b{b}"][v]["from_third_mean"], b) for v in ("new", "base")}
            for b in (1, 16, 64)}


def cmp_steps(path, replays=(0, 1, 2, 6, 10)):
    """A node trace's replays (the largest graph's): each one's span (us) and its k_compress durations."""
    rows = list(csv.DictReader(gzip.open(path, "rt")))
    byg = {}
    for r in rows:
        if r["graph_id"] != "0":
            byg.setdefault(r["graph_id"], []).append(r)
    rs = sorted(byg[max(byg, key=lambda k: len(byg[k]))], key=lambda r: int(r["start_ns"]))
    n = len({r["graph_node_id"] for r in rs})
    out = {}
    for k in replays:
        rep = rs[k * n:(k + 1) * n]
        t0, t1 = min(int(r["start_ns"]) for r in rep), max(int(r["end_ns"]) for r in rep)
        out[f"replay_{k}"] = {"us": round((t1 - t0) / 1e3, 1),
                              "k_compress_us": [round((int(r["end_ns"]) - int(r["start_ns"])) / 1e3, 1)
                                                for r in rep if "k_compress" in r["name"]]}
    return out


def suite(call):
    """The verify call's pass lines: each section's result, the logits checks, the memchecks."""
    p = os.path.join(D, call, "suite.txt.gz")
    keep = re.compile(r"^(==|logits|suite rc|-- memcheck|\[  PASSED|\[  FAILED|exit)")
    return [ln.rstrip("\n") for ln in gzip.open(p, "rt") if keep.match(ln)] if os.path.exists(p) else []


side, side2 = call_rounds(D, "side"), call_rounds(D, "side2")
rp2, final, cmp, pair = call_rounds(D, "rp2"), call_rounds(D, "final"), call_rounds(D, "cmp"), call_rounds(D, "pair")
print(json.dumps({
    "session": "s54 (landed: the k_wg8 ring budget of the second queue's launches of up to 16-token tiles, 32 KB "
               "an SM - the shared expert beside the routed experts in decode; s53's router chain, now paying; the "
               "compressors' emitting steps by warps, their two launches in one)",
    "machine": "one NVIDIA H200 per call (calls landed on different machines: compare within a call only)",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B",
    "experts_gate_up_probe": {
        "what": "bench/stream_probe.cu: the routed experts' gate / up pass at one token (k_moe16's grid, rows and "
                "ring) with its decode and MMAs replaced by FMA chains, after a 512 MB read flush; median us of 9 "
                "repeats between events; probe/ is the first version (a writing flush: L2's dirty lines written "
                "back during the probe), not used",
        "probe2": probe(os.path.join(D, "probe2", "probe.txt")),
        "experts_op_alone_ref": [experts_ref(os.path.join(D, "probe2", f"experts-cur-{i}.txt")) for i in (1, 2)],
    },
    "side_budget_knobs": {
        "what": "the same binary: DSV4_WG8_SIDE_KB (32, 64; base: 200), DSV4_WG8_SCLAMP=1, DSV4_WG8_SMEM_KB=64 "
                "(every k_wg8 launch), three rounds",
        "decode_ms": side,
        "ffn_b1_us": {v: ffn(os.path.join(D, "side", f"kt-{v}-b1.csv.gz")) for v in ("base", "s32")},
    },
    "side_budget_default": {
        "what": "DSV4_WG8_SIDE_KB default 32 at every token tile (new) against the build before (base), newc: "
                "with DSV4_WG8_SCLAMP=1; landed for tiles of up to 16 tokens only (32 slower)",
        "decode_ms": side2,
        "x_floor": floors(side2),
        "bits": lines("side2", "bits.txt"),
    },
    "router_chain_again": {
        "what": "s53's route-plan.diff on the side budget's tree, one binary: new (all on), old (DSV4_ROUTE_PLAN=0 "
                "DSV4_ROUTE_RX=0 DSV4_MMA_TRIG=0), each with the side budget 32 and 200 (DSV4_WG8_SIDE_KB=200)",
        "decode_ms": rp2,
        "ffn_b1_us": {v: ffn(os.path.join(D, "rp2", f"kt-{v}-b1.csv.gz")) for v in ("new", "old")},
    },
    "session": {
        "what": "the tree (side budget and router chain landed) against 5a3f845's kernels (bench_cpu.base), three "
                "rounds; the warm 4,096-token prefill, two rounds; verify/: the whole suite with quick memchecks",
        "decode_ms": final,
        "x_floor": floors(final),
        "prefill_4096": prefills(os.path.join(D, "final")),
        "suite": suite("verify"),
    },
    "compressors": {
        "what": "k_compress's emitting steps: the indexer row's Hadamard / BF16 / FP4SIM and FP4 pack and the KV "
                "row's FP8SIM by warps (sim.cuh), the state's copies with their loads batched (new) against "
                "3018ea6's build (base), three rounds; b1c4k: batch 1 at a 4,096-token context",
        "decode_ms": cmp,
        "x_floor": floors(cmp),
        "bits": lines("cmp", "bits.txt"),
        "emitting_step_us": {"what": "node traces at batch 1, replays 0 / 1 / 2 / 6 / 10 (every fourth step emits in the "
                                     "CSA layers); k_compress durations in the three CSA layers",
                             "base_3018ea6": cmp_steps(os.path.join(D, "final", "kt-new-b1.csv.gz")),
                             "new": cmp_steps(os.path.join(D, "cmp", "kt-new-b1.csv.gz")),
                             "pair": cmp_steps(os.path.join(D, "pair", "kt-new-b1.csv.gz"))},
    },
    "compressor_pair": {
        "what": "a CSA layer's two compressors in one k_compress launch in decode (compress_pair) and the pooling's "
                "loads at once (new), DSV4_CMP_PAIR=0 (nopair: the loads only), ea96045's build (base), two rounds; "
                "the whole suite with quick memchecks, logits byte for byte against ea96045",
        "decode_ms": pair,
        "x_floor_b1_b16_new": [x_floor(pair["b1"]["new"]["from_third_mean"], 1),
                               x_floor(pair["b16"]["new"]["from_third_mean"], 16)],
        "suite": suite("pair"),
    },
}, indent=1))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s56: what s55 left unrun, ncu's warp states in k_moe16's
loop, and the routed experts' activation scales through a ring of their own with two row blocks a block) as one
JSON:
    python3 bench/results/2026-12-04-s56/summary.py > bench/results/h200-2026-12-04-s56.json
Reads the decode A/Bs of verify/, xring/, xring2/ and final/, the experts alone, the suites and logits checks and
ncu/'s details; standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_lines, call_rounds, experts_alone, means, serve, suite, x_floor  # noqa: E402


def ncu(b, call="ncu", stem="det-b{}.txt"):
    names = {"Duration", "Warp Cycles Per Issued Instruction", "Registers Per Thread", "Achieved Active Warps Per SM",
             "Waves Per SM", "DRAM Throughput", "SM Frequency", "Theoretical Occupancy", "Achieved Occupancy"}
    out = {}
    for ln in call_lines(D, call, stem.format(b)):
        m = re.match(r"(.+?)\s{2,}(\S+)\s{2,}([\d.,]+)$", ln)
        if m and m.group(1) in names:
            out[f"{m.group(1)} ({m.group(2)})"] = m.group(3)
    return out


final = call_rounds(D, "final")
print(json.dumps({
    "session": "s56, 2026-12-04",
    "machine": "one H200 a call",
    "base": "b454fe8's build (the last tree s55 ran on the GPU)",
    "decode_setup": "8 Flash-shaped layers (dsv4 mkmodel --preset flash --layers 8 --sparse), reference numerics, "
                    "--fill-random, 16-token prompt, 64 decode steps, bench_cpu --overlap; ms a step from the third "
                    "step on; rounds alternating in one call; each folder's run.sh is the call",
    "verify": {"what": "what s55 left unrun (6825e06, afa1803, gpu_bits.sh's 2,100-token case on 4 layers) against "
                       "b454fe8: the whole suite with quick memchecks, logits byte for byte; decode two rounds",
               "decode_ms": means(call_rounds(D, "verify")), "bits": call_lines(D, "verify", "bits.txt"),
               "suite": suite(D, "verify")},
    "ncu": {"what": "k_moe16<MXFP4, 1 plane, gate / up, 1 n tile, 1 row block> under ncu (clocks locked at ~1.35 "
                    "GHz) at 1 and 16 tokens: details, stall samples by SASS line (stalls-b*.txt)",
            "b1": ncu(1), "b16": ncu(16)},
    "next": {"what": "for the next session, on dd9d452: the two-row-block kernels at 16 tokens under ncu (d0: gate / "
                     "up, d1: down; stall samples in stalls-rb2-d*.txt) and a batch-16 node trace (kt-b16.*)",
             "gate_up_rb2_b16": ncu(0, "next", "det-rb2-d{}.txt"), "down_rb2_b16": ncu(1, "next", "det-rb2-d{}.txt")},
    "nvfp4": {"what": "8 Flash-shaped layers with NVFP4 experts (mkmodel --experts nvfp4): two row blocks a block "
                      "(rb2: DSV4_MOE_RB=2) against the rule then (one row block for NVFP4), dd9d452's binary",
              "decode_ms": means(call_rounds(D, "nvfp4"))},
    "nvfp4b": {"what": "the rule extended to NVFP4 (two row blocks from 5 waves of tiles) against one row block "
                       "everywhere (rb1: DSV4_MOE_RB=1), the same binary",
               "decode_ms": means(call_rounds(D, "nvfp4b"))},
    "serve": {"what": "dsv4 serve on 8 Flash-shaped layers driven by dsv4 bench (64 in, 32 out) at concurrency 1 / "
                      "16 / 64: the session's tree (new) and b454fe8 (base), one server each",
              "bench": {v: serve(os.path.join(D, "serve"), f"serve-{v}") for v in ("new", "base")}},
    "xring": {"what": "the activation scales in each ring stage for every row-block count (not kept): new against "
                      "base; suite passed, logits byte for byte",
              "decode_ms": means(call_rounds(D, "xring")), "experts_alone_us": experts_alone(D, "xring"),
              "suite": suite(D, "xring")},
    "xring2": {"what": "the scales through a ring of their own with two row blocks a block only (the RB 1 kernels' "
                       "SASS the base's); rb2: DSV4_MOE_RB=2 (two row blocks everywhere)",
               "decode_ms": means(call_rounds(D, "xring2")),
               "decode_ms_rb": means(call_rounds(D, "xring2", case=r"rb-b\d+")),
               "experts_alone_us": experts_alone(D, "xring2"), "bits": call_lines(D, "xring2", "bits.txt"),
               "suite": suite(D, "xring2")},
    "final": {"what": "the landed tree (xring2's kernels, two row blocks a block from 5 waves of tiles: batch 7 "
                      "and up) against base; rb2 against the tree at batch 1 / 4",
              "decode_ms": final, "decode_ms_rb": means(call_rounds(D, "final", case=r"rb-b\d+")),
              "x_floor": {f"b{b}": {v: x_floor(final[f"b{b}"][v]["from_third_mean"], b) for v in ("new", "base")}
                          for b in (1, 16, 64)}},
}, indent=1))

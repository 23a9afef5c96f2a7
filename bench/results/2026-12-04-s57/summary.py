#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s57: the two k_moe16 variants s56 prepared and left unrun,
batch-1 / 4 node traces, the shared expert at a higher priority, and the down projection's two row blocks from 4
waves, the 2-pair tiles at batch 4 only; final/, run at the start of s58: the three landed together against
9dc41f3) as one JSON:
    python3 bench/results/2026-12-04-s57/summary.py > bench/results/h200-2026-12-04-s57.json
Reads the decode A/Bs, the experts alone, the suites and the traces' step lines; standard library only."""
import gzip
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_lines, call_rounds, experts_alone, ktrace_step, means, serve, suite, x_floor  # noqa: E402

pro = call_rounds(D, "prologue")
fin = call_rounds(D, "final")
print(json.dumps({
    "session": "s57, 2026-12-04",
    "machine": "one H200 a call",
    "base": "9dc41f3's build (its kernels are 49e5ca2's and 6b4b0b3's, the bases the two diffs name)",
    "decode_setup": "8 Flash-shaped layers (dsv4 mkmodel --preset flash --layers 8 --sparse), reference numerics, "
                    "--fill-random, 16-token prompt, 64 decode steps, bench_cpu --overlap; ms a step from the third "
                    "step on; rounds alternating in one call; the calls are s56's late/run.sh and prologue/run.sh",
    "late": {"what": "s56's late.diff (not kept): the one-row-block k_moe16 with its activation scales through the "
                     "ring and its scale FMAs after the group's MMAs (96 registers), against base",
             "decode_ms": means(call_rounds(D, "late")), "experts_alone_us": experts_alone(D, "late"),
             "bits": call_lines(D, "late", "bits.txt"), "suite": suite(D, "late")},
    "prologue": {"what": "s56's prologue.diff: k_moe16's tile read with the tile count, every kernel, against base. "
                         "Kept for one row block a block only (the landed kernels' SASS: the one-row-block kernels "
                         "this call's, the two-row-block kernels base's but for one commuted add)",
                 "decode_ms": means(pro), "experts_alone_us": experts_alone(D, "prologue"),
                 "bits": call_lines(D, "prologue", "bits.txt"), "suite": suite(D, "prologue"),
                 "x_floor": {f"b{b}": {v: x_floor(pro[f"b{b}"][v]["from_third_mean"], b) for v in ("new", "base")}
                             for b in (1, 16, 64)}},
    "kt": {"what": "node traces of c310eef at batch 1, 1 x 4k and 4 (kt-*.txt: bench/ktrace.py's tables); then the "
                   "two-row-block rule (new) against one row block everywhere (rb1: DSV4_MOE_RB=1) at batch 6 / 7 / 8",
           "traces": {t: ktrace_step(os.path.join(D, "kt", f"kt-{t}.txt")) for t in ("b1", "b1c4k", "b4")},
           "decode_ms": means(call_rounds(D, "kt"))},
    "shprio": {"what": "shprio.diff (not kept): the shared expert's launches at the greatest priority, decode graphs "
                       "with node priorities honoured; sp1 all of them, sp2 those after its gate / up, sp0 neither",
               "decode_ms": means(call_rounds(D, "shprio")),
               "traces": {t: ktrace_step(os.path.join(D, "shprio", f"kt-{t}.txt"))
                          for t in ("sp2-b4", "sp2-b16", "sp0-b16")}},
    "rbsplit": {"what": "rbsplit.diff's knobs: two row blocks for the down projection alone (dn2) or gate / up alone "
                        "(gu2) against the rule (new) at batch 1 / 2 / 4; the experts alone at 1 / 2 / 4 tokens",
                "decode_ms": means(call_rounds(D, "rbsplit")), "experts_alone_us": experts_alone(D, "rbsplit")},
    "dn4": {"what": "the landed rule (the down projection's two row blocks from 4 waves: batch 4) against c310eef; "
                    "b4n: 8 layers with NVFP4 experts",
            "decode_ms": means(call_rounds(D, "dn4")), "bits": call_lines(D, "dn4", "bits.txt"),
            "suite": suite(D, "dn4")},
    "bp": {"what": "the experts' 2-pair tiles (moe16_bp2, then batch 4-12) against 8-pair tiles everywhere (bp0: "
                   "DSV4_MOE_BP=0), e958cbb's binary",
           "decode_ms": means(call_rounds(D, "bp"))},
    "bp4": {"what": "the landed rule (2-pair tiles at batch 4 only) against 6bfd9b3's build; test_ops_cuda",
            "decode_ms": means(call_rounds(D, "bp4")), "ops": [ln.strip() for ln in gzip.open(os.path.join(D, "bp4", "ops_cuda.txt.gz"), "rt")
                    if re.match(r"\[  (PASSED|FAILED)|exit", ln)]},
    "final": {"what": "run at the start of s58 (the call s57 prepared): s57's three landed changes together (4e84d0b's "
                      "build, new) against 9dc41f3's (base), decode at batch 1-64; 2-pair tiles forced at 1-3 tokens "
                      "(bp1: DSV4_MOE_BP=1) against the tree's choice; dsv4 serve on the 8 layers driven by dsv4 "
                      "bench (64 in, 32 out) at concurrency 1 / 8 / 16 / 64, one server each",
              "decode_ms": means({k: v for k, v in fin.items() if not k.startswith("bp-")}),
              "bp_forced_ms": means(call_rounds(D, "final", case=r"bp-b\d+")),
              "x_floor": {f"b{b}": {v: x_floor(fin[f"b{b}"][v]["from_third_mean"], b) for v in ("new", "base")}
                          for b in (1, 16, 64)},
              "bench": {v: serve(os.path.join(D, "final"), f"serve-{v}") for v in ("new", "base")}},
}, indent=1))

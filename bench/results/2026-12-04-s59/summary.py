#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s59: where the experts' time goes at one token; reference
numerics' attention with per-part maxima) as one JSON:
    python3 bench/results/2026-12-04-s59/summary.py > bench/results/h200-2026-12-04-s59.json
Reads ncu's metric pages, the attention tables, the decode A/Bs and the suites; standard library only."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import attn, call_rounds, means, suite  # noqa: E402

KEYS = {"gpu__time_duration.sum": "us", "sm__inst_executed.sum": "instructions",
        "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_pct", "dram__bytes_read.sum": "dram_read",
        "sm__warps_active.avg.per_cycle_active": "warps_per_sm", "sm__cycles_elapsed.avg.per_second": "ghz"}


def ncu_metrics(path):
    """ncu --metrics' page: a list of {kernel, metric name -> value} per profiled launch (DRAM bytes in MB)."""
    out, cur = [], None
    for ln in open(path):
        m = re.match(r"  (?:void )?(k_\w+(?:<[^>]*>)?)\(", ln)
        if m:
            cur = {"kernel": m.group(1)}
            out.append(cur)
            continue
        f = ln.split()
        if cur is not None and len(f) >= 3 and f[0] in KEYS:
            v = float(f[-1].replace(",", ""))
            if f[0] == "dram__bytes_read.sum":
                v *= {"Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3, "byte": 1e-6}.get(f[1], 1.0)
            cur[KEYS[f[0]]] = v
    return out


def attn_calls(call):
    """A call's bench_kernels --attn-only files: variant -> round -> row -> bB -> us."""
    out = {}
    for f in sorted(os.listdir(os.path.join(D, call))):
        m = re.match(r"attn-(\w+)-(\d+)\.txt$", f)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = attn(os.path.join(D, call, f))
    return out


def version(call, what, timed=True):
    """One version of the per-part attention numerics: its suite, and (timed) its attention alone and decode."""
    out = {"what": what}
    if os.path.exists(os.path.join(D, call, "suite.txt.gz")):
        out["suite"] = suite(D, call)
    if timed:
        out["attention_us"] = attn_calls(call)
        out["decode_ms"] = means(call_rounds(D, call))
    return out


print(json.dumps({
    "session": "s59, 2026-12-04",
    "machine": "one H200 a call",
    "gap": {"what": "ncu at the GPU's own clocks (--clock-control none, its cache flush before each kernel): one "
                    "reference-numerics experts call at 1 token (bench_kernels --experts-only --batch 1: plan, x "
                    "pack, gate / up, M pack, down; two calls) and stream_probe's dec / mma kernels (128 row blocks "
                    "an expert; dec also at 88)",
            "experts": ncu_metrics(os.path.join(D, "gap", "ncu-experts.txt")),
            "probe": ncu_metrics(os.path.join(D, "gap", "ncu-probe.txt")),
            "plain_experts": ncu_metrics(os.path.join(D, "gap", "plain", "ncu-experts.txt"))},
    "attention_setup": "bench_kernels --attn-only --batch 1,16,64 (64 heads of 512, BF16 cached rows, reference "
                       "numerics; new then base = 9dc41f3's build, the definition before); decode: 8 Flash-shaped "
                       "layers, reference numerics, --fill-random, 16-token prompt, 64 steps, bench_cpu --overlap, "
                       "ms a step from the third, new then base",
    "pp": version("pp", "first version: k_attn_md16 a warp a head walking the parts (suite only)", timed=False),
    "ppt": version("ppt", "the first version timed"),
    "pp2": version("pp2", "second version: k_attn_md16's pairs in registers counted from the token's first row; "
                          "k_attn_one's maxima and sums stored at their owners"),
    "ncu16": {"what": "ncu at the GPU's clocks, no cache flush: the attention kernels of two calls at 16 / 64 tokens "
                      "(CSA, 4k), pp2/'s build (new) and 9dc41f3's (base)",
              "launches": {f"{v}-b{b}": ncu_metrics(os.path.join(D, "ncu16", f"ncu-{v}-b{b}.txt"))
                           for v in ("new", "base") for b in (16, 64)}},
    "pp3": version("pp3", "third version: sums counted from each part's first row; k_attn_md16 every part's pairs "
                          "in registers (128 registers, spills)"),
    "pp4": version("pp4", "fourth version, landed: k_attn_md16 a block a (token, head), a warp a part"),
}, indent=1))

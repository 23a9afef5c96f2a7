#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s59) as one JSON:
    python3 bench/results/2026-12-04-s59/summary.py > bench/results/h200-2026-12-04-s59.json
Reads ncu's metric pages; standard library only."""
import json
import os
import re

D = os.path.dirname(os.path.abspath(__file__))
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
}, indent=1))

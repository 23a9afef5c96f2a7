#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s77: the weights read after two DRAM-idle kernels prefetched
into L2 by those kernels, measured, not landed) as one JSON:
    python3 bench/results/2026-12-06-s77/summary.py > bench/results/mixed-2026-12-06-s77.json
Standard library only."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import DECODE_OVL_WHAT, call_lines, call_rounds, machine, means, verdicts, wo_a_start  # noqa: E402,E501


def per_kernel(path):
    """A node trace report's per-kernel table (kt-*.txt): name -> [nodes, advance us, duration us a node]."""
    out, on = {}, False
    for ln in open(path):
        if ln.startswith("kernel ") and "nodes" in ln:
            on = True
        elif on:
            m = re.match(r"(.+?)\s+(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s*$", ln)
            if m:
                out[m.group(1).strip()] = [int(m.group(2)), float(m.group(3)), float(m.group(4))]
    return out


l2p = os.path.join(D, "l2p")
traces = {t: per_kernel(os.path.join(l2p, f"kt-{t}.txt")) for t in ("b1-off", "b1")}
moved = {k: {"off": traces["b1-off"][k], "on": traces["b1"][k]} for k in traces["b1"] if k in traces["b1-off"] and
         abs(traces["b1"][k][1] - traces["b1-off"][k][1]) >= 2.0}
out = {"session": "s77, 2026-12-06", "l2p": {
    "what": "branch wip/l2pf (b054439d; l2p/l2pf.diff): cp.async.bulk.prefetch.L2 over be->next_w (the forward "
            "pass's hint of the weights read after an op) from k_attn_one's blocks once their rows are in (wo_a; "
            "DSV4_ATTN_L2PF=1, 3 at their end, 0 none) and from the FFN's k_hc_post before its wait (the next "
            "layer's wq_a, wkv, compressors' and indexer's projections; DSV4_HC_L2PF=N the first N, 0 none); "
            "test_ops_cuda (with a hint case), test_gpu_vs_cpu, the logits against main's build; node traces at "
            "batch 1 with both on and both off; " + DECODE_OVL_WHAT + ": all (both on), attn (k_attn_one's only), "
            "hc (k_hc_post's only), hc2 (k_attn_one's + k_hc_post's first two: wq_a, wkv), pf3 (k_attn_one's at "
            "its end + k_hc_post's), off",
    "machine": machine(l2p), "tests": verdicts(l2p, ["ops_cuda.txt.gz", "gpu_vs_cpu.txt.gz"]),
    "bits": call_lines(D, "l2p", "bits.txt"),
    "wo_a": {t: wo_a_start(os.path.join(l2p, f"kt-{t}.csv.gz")) for t in ("b1-off", "b1")},
    "kernels_moved_2us_or_more": moved,
    "decode_ms": call_rounds(D, "l2p"), "decode_ms_means": means(call_rounds(D, "l2p")),
    "verdict": "batch 1: attn even (1.559-1.564 against 1.563-1.565 ms), hc2 +0.2 %, hc / all +3.2 %, pf3 +4.4 %; "
               "batch 16 even: not landed"}}


def groups_table(path):
    """bench_kernels' "wo_a, all groups" rows: batch -> [cold us, warm us]."""
    return {int(m.group(1)): [float(m.group(2)), float(m.group(3))] for m in
            (re.match(r"wo_a \(8 groups\)\s+(\d+)\s+[\d.]+\s+([\d.]+)\s+\d+\s+\d+%\s+([\d.]+)", ln)
             for ln in open(path)) if m}


woa = os.path.join(D, "woa")
out["woa"] = {
    "what": "bench_kernels --linear-only --batch 1,16 (main's ab8e186a), two rounds: wo_a as the model runs it (8 groups "
            "in one linear_groups launch, unquantised activations, reference numerics), cold (copies rotated past the "
            "50 MB L2) and warm (one copy again and again), us a call; the copy rate and the other linears in the "
            "same runs",
    "machine": machine(woa),
    "copy_gb_s": [float(re.search(r"copy (\d+) GB/s", open(os.path.join(woa, f"lin-new-{i}.txt")).read()).group(1))
                  for i in (1, 2)],
    "wo_a_groups_us": {f"round {i}": groups_table(os.path.join(woa, f"lin-new-{i}.txt")) for i in (1, 2)},
    "verdict": "batch 1: 18.7-18.8 us cold (59 % of copy), 16.4-16.5 warm (2.0 TB/s from L2): the kernel, not DRAM, "
               "bounds wo_a at one token"}
print(__import__("json").dumps(out, indent=1, ensure_ascii=False))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s27: v47) as one JSON:
    python3 bench/results/2026-12-01-s27/summary.py > bench/results/h200-2026-12-01-v47.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the attention tables (attn-*.txt: bench_kernels --attn-only), the
ncu details pages (prof/details-*.txt), the phase trace (trace/trace.txt.gz) and the closing call's summary.txt
and dsv4 bench's JSON (summary_lib.head); standard library only."""
import gzip
import json
import os
import re
import statistics
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import attn as attn_rows, call_ab, head  # noqa: E402


def attn(call, name):
    """A call's attention table (summary_lib.attn_rows)."""
    return attn_rows(os.path.join(D, call, name))


def ncu(call, name):
    """The first launch's figures of an ncu details page, per kernel launch in order."""
    keys = ("Duration", "Issue Slots Busy", "Warp Cycles Per Issued Instruction", "Achieved Occupancy",
            "Registers Per Thread", "DRAM Throughput")
    out, cur = [], None
    for line in open(os.path.join(D, call, name)):
        if re.match(r"\s+\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line):
            cur = {"kernel": line.strip().split("(")[0]}
            out.append(cur)
        elif cur is not None:
            for k in keys:
                m = re.match(r"\s+" + re.escape(k) + r"\s+(\S+(?:/\S+)?)?\s+([\d.,]+)$", line)
                if m and k not in cur:
                    cur[k] = float(m.group(2).replace(",", ""))
    return out


def trace():
    """k_attn_one's phases at batch 1: (kind, rows) -> part -> phase -> median cycles (thread 0's clock64)."""
    names = ("rows + window copies", "other copies", "scores", "cluster barrier 1", "max + den + weights",
             "weighted sum", "cluster barrier 2", "parts' sums", "cluster barrier 3")
    g = {}
    for line in gzip.open(os.path.join(D, "trace", "trace.txt.gz"), "rt"):
        f = line.split()
        if not f or f[0] != "aftrace":
            continue
        kind = {"1": "CSA", "2": "HCA"}.get(f[2], f[2])
        g.setdefault(f"{kind} {f[4]} rows", {}).setdefault("p" + f[6], []).append([int(x) for x in f[15:24]])
    return {k: {p: dict(zip(names, (statistics.median(r[i] for r in rs) for i in range(9))))
                for p, rs in sorted(v.items())} for k, v in g.items()}


def experts(call, name):
    """bench_kernels' expert rows: variant -> bB -> us a call."""
    res = {}
    for line in open(os.path.join(D, call, name)):
        m = re.match(r"experts \(([^)]+)\)\s+(\d+)\s+[\d.]+\s+([\d.]+)", line)
        if m:
            res.setdefault(m.group(1), {})["b" + m.group(2)] = float(m.group(3))
    return res


AB = "decode ms per step by case (bN: batch N, 8 Flash layers, reference numerics, prompt 16, 32 steps; c32k: a " \
     "32,768-token context) and variant, alternating (scripts/gpu_ab.sh)"
res = {
    "source": "bench/results/2026-12-01-s27",
    "device": "NVIDIA H200 (sm_90)",
    "one_den": {
        "what": "k_attn_one storing each score at its head's owner (1c13911) with one.json ('one'), the built-in "
                "choices ('auto'), main's k_attn_one with one.json ('one-base'); one layer, us a call",
        "attention": {v: attn("combo", f"attn-{v}.txt") for v in ("one", "auto", "one-base")},
        "decode": {"layout": AB + "; one1 = DSV4_TUNE=one1.json (k_attn_one at 1 token), auto = built in, base1 "
                                  "= main's build with one1.json", "runs": call_ab(D, "combo")},
    },
    "one_at_1_token": {
        "what": "decode with one1.json against the built-in table (before 6793591 put 'one' at 1 token in it)",
        "decode": {"layout": AB, "runs": call_ab(D, "prof")},
        "ncu": {"k_attn_one CSA 4k": ncu("prof", "details-one-csa.txt"),
                "k_attn_one HCA 4k": ncu("prof", "details-one-hca.txt"),
                "k_moe16 gate/up, down": ncu("prof", "details-moe1.txt")},
    },
    "no_qpack": {
        "what": "k_attn_one rounding q and the step's rows itself, no k_attn_qpack (e9d0c45) against 78bb740",
        "attention": {v: attn("noqpack", f"attn-{v}.txt") for v in ("new", "base")},
        "decode": {"layout": AB + "; base = 78bb740", "runs": call_ab(D, "noqpack")},
    },
    "trace": {"what": "k_attn_one at batch 1 phase by phase, median cycles of thread 0 (trace/trace.diff; the "
                      "printing slows the calls, the cycles between phases stand)", "phases": trace()},
    "push_not_kept": {
        "what": "maxima and weighted sums pushed through distributed shared memory (push/push.diff) against e9d0c45",
        "attention": {v: attn("push", f"attn-{v}.txt") for v in ("new", "base")},
        "decode": {"layout": AB + "; base = e9d0c45", "runs": call_ab(D, "push")},
    },
    "bulk_not_kept": {
        "what": "a bulk copy (cp.async.bulk) a cached row (bulk/bulk.diff) against e9d0c45",
        "attention": {v: attn("bulk", f"attn-{v}.txt") for v in ("new", "base")},
        "decode": {"layout": AB + "; base = e9d0c45", "runs": call_ab(D, "bulk")},
    },
    "moe_nob_not_kept": {
        "what": "k_moe16 with one activation plane taking B from L2 at five blocks an SM (moe-nob/nob.diff, "
                "DSV4_MOE_NOB=1: 'nob') against the ring ('ring'): bench_kernels --experts-only, us a call",
        "experts": {v: experts("moe-nob", f"experts-{v}.txt") for v in ("nob", "ring")},
        "decode": {"layout": AB, "runs": call_ab(D, "moe-nob")},
    },
    "moe_nob_batches": {
        "what": "the same experiment at 2-32 tokens (moe-nob2): the experts alone twice each, decode at batch "
                "4 / 8 / 12; then 9ff512d (five blocks by default from 4 tokens) against 153e5fd (nob-suite) and "
                "its default against DSV4_MOE_NOB=0 at batch 8 (nob-ab)",
        "experts": {v: experts("moe-nob2", f"experts-{v}.txt") for v in ("nob", "ring", "nob2", "ring2")},
        "decode": {"layout": AB, "runs": call_ab(D, "moe-nob2")},
        "decode_default_vs_main": {"layout": AB + "; base = 153e5fd", "runs": call_ab(D, "nob-suite")},
        "decode_default_vs_off": {"layout": AB + "; ring = DSV4_MOE_NOB=0", "runs": call_ab(D, "nob-ab")},
    },
    "head": head(os.path.join(D, "closing"), "the closing call (e104155: e9d0c45's code, scripts/gpu_head.sh), "
                                              "two runs each"),
}
json.dump(res, sys.stdout, indent=1)
print()

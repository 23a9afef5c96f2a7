#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s29: v49) as one JSON:
    python3 bench/results/2026-12-01-s29/summary.py > bench/results/h200-2026-12-01-v49.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the routed experts' tables (experts-*.txt: bench_kernels
--experts-only), the tuner's file (r2/tune.json), the experts' block timeline (r2/trace-b*.txt.gz, bench/moe_trace.py's
input), one decode step's kernels alone (r3/ncu-b*.csv.gz, bench/ncu_step.py's input) and the closing call's
summary.txt (summary_lib.head); standard library only."""
import collections
import csv
import gzip
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_ab, experts, head  # noqa: E402


def ex(call, name):
    """The reference-numerics row of an experts table: batch_B -> us, % of copy."""
    return experts(os.path.join(D, call, name), kinds=r"ref\.")["ref."]


def trace(name):
    """A block timeline (moetrace KIND SM T0 T1, us from the call's first block): per kernel its blocks, first
    entry, last exit and median block time."""
    recs = collections.defaultdict(list)
    with gzip.open(os.path.join(D, "r2", name), "rt") as f:
        for line in f:
            p = line.split()
            if len(p) == 5 and p[0] == "moetrace":
                recs[int(p[1])].append((float(p[3]), float(p[4])))
    names = {0: "plan", 1: "gate/up", 2: "down"}
    out = {}
    for k, rs in sorted(recs.items(), key=lambda kv: min(r[0] for r in kv[1])):
        d = sorted(b - a for a, b in rs)
        out[names.get(k, f"pack K={k - 100000}")] = {"blocks": len(rs), "first_in_us": round(min(r[0] for r in rs), 2),
                                                    "last_out_us": round(max(r[1] for r in rs), 2),
                                                    "median_block_us": round(d[len(d) // 2], 2)}
    return out


def step_kernels(name):
    """One decode step's kernels alone (ncu): kernel -> calls, us (sum), MB read."""
    with gzip.open(os.path.join(D, "r3", name), "rt") as f:
        rows = [line for line in f if line.startswith('"')]
    ks = collections.OrderedDict()
    for r in csv.DictReader(rows):
        k = ks.setdefault(int(r["ID"]), {"name": r["Kernel Name"]})
        try:
            k[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
        except ValueError:
            pass
    ks = [k for k in ks.values() if not k["name"].startswith("synth_fill")]
    s = [i for i, k in enumerate(ks) if k["name"].startswith("k_sample")]
    out = collections.OrderedDict()
    for k in ks[s[-2] + 1:s[-1] + 1]:
        n = re.sub(r"^void ", "", k["name"].split("(")[0])
        o = out.setdefault(n, {"calls": 0, "us": 0.0, "MB": 0.0})
        o["calls"] += 1
        o["us"] = round(o["us"] + k.get("gpu__time_duration.sum", 0) / 1e3, 2)
        o["MB"] = round(o["MB"] + k.get("dram__bytes_read.sum", 0) / 1e6, 2)
    return {"total_us": round(sum(o["us"] for o in out.values()), 1), "kernels": out}


AB = "decode ms per step by case (bN: batch N, 8 Flash layers, reference numerics, prompt 16, 32 steps) and " \
     "variant, alternating (scripts/gpu_ab.sh)"
EXP = "the routed experts alone (bench_kernels --experts-only, reference numerics' row: 256 MXFP4 experts, top-6 " \
      "random routing, us a call and % of the copy bandwidth measured in the same run)"
res = {
    "source": "bench/results/2026-12-01-s29",
    "device": "NVIDIA H200 (sm_90)",
    "mpack_not_kept": {
        "what": "wip/moe-mpack (M packed in gate / up's epilogue by the last block of a 128-row group, no "
                "k_moe_pack16 launch between the passes; mpack/mpack.diff): m1 = on, m0 = DSV4_MOE_MPACK=0",
        "experts": {f"DSV4_MOE_MPACK={v}": ex("mpack", f"experts-m{v}.txt") for v in (1, 0)},
        "experts_what": EXP,
        "decode": {"layout": AB, "runs": call_ab(D, "mpack")},
    },
    "experts_timeline": {
        "what": "a block timeline of one experts call (MOE_TRACE build, DSV4_MOE_TRACE=60: reference numerics' 9th "
                "timed call, started from an idle GPU, so the gaps before gate / up are host launch latency)",
        "batch_1": trace("trace-b1.txt.gz"),
        "batch_8": trace("trace-b8.txt.gz"),
    },
    "tune_over_decode_shapes": {
        "what": "dsv4 tune timing attention over CSA 4k (x3) + HCA 4k, 32k, 128k; its file (tuned) against the "
                "built-in table of e007a00 (auto)",
        "attention": json.load(open(os.path.join(D, "r2", "tune.json")))["attention"],
        "decode": {"layout": AB, "runs": call_ab(D, "r2")},
    },
    "decode_step_kernels_alone": {
        "what": "every kernel of one decode step timed alone (ncu --graph-profiling node, gpu__time_duration, "
                "dram__bytes_read), 8 Flash layers, reference numerics",
        "batch_1": step_kernels("ncu-b1.csv.gz"),
        "batch_16": step_kernels("ncu-b16.csv.gz"),
    },
    "embed_and_table": {
        "what": "k_embed_bf16 and the tuned table (one up to 2 tokens) against e007a00 (base)",
        "decode": {"layout": AB, "runs": call_ab(D, "r4")},
        "k_embed_alone_us": {"new": [4.99, 3.90, 3.94, 4.13, 3.71], "base": [10.34, 9.47, 9.02, 9.12, 9.25]},
    },
    "l2_prefetch_not_kept": {
        "what": "gate / up's blocks prefetching down's weights into L2 (r5/l2pf.diff, DSV4_MOE_L2PF; last = with "
                "the evict-last policy) against off",
        "experts": {v: ex("r5", f"experts-{v}.txt") for v in ("off", "on", "last", "base")},
        "experts_what": EXP,
        "decode": {"layout": AB, "runs": call_ab(D, "r5")},
    },
    "session_against_e007a00": {
        "what": "the session's code (634bae9) against e007a00 in the closing call (its ab.txt, experts-*.txt and "
                "summary.txt are the call's printed lines: output.txt)",
        "experts": {v: ex("closing", f"experts-{v}.txt") for v in ("new", "base")},
        "experts_what": EXP,
        "decode": {"layout": AB + "; base = e007a00", "runs": call_ab(D, "closing")},
    },
    "head": head(os.path.join(D, "closing"), "the closing call (634bae9, scripts/gpu_head.sh HEAD_RUNS=1 "
                                              "HEAD_SERVE=0: one run each, no server)"),
}
json.dump(res, sys.stdout, indent=1)
print()

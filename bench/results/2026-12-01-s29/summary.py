#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s29: v49) as one JSON:
    python3 bench/results/2026-12-01-s29/summary.py > bench/results/h200-2026-12-01-v49.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the routed experts' tables (experts-*.txt: bench_kernels
--experts-only), the tuner's file (r2/tune.json), the experts' block timeline (r2/trace-b*.txt.gz, bench/moe_trace.py's
input), one decode step's kernels alone (r3/ncu-b*.csv.gz, bench/ncu_step.py's input) and the closing call's
summary.txt (summary_lib.head); standard library only."""
import collections
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
sys.path.insert(0, os.path.dirname(os.path.dirname(D)))  # bench/: the readers of the trace and of ncu's CSV
import moe_trace  # noqa: E402
import ncu_step  # noqa: E402
from summary_lib import AB_WHAT, EXPERTS_WHAT, call_ab, experts_ref, head  # noqa: E402


def ex(call, name):
    """The reference-numerics row of a call's experts table (summary_lib.experts_ref)."""
    return experts_ref(os.path.join(D, call, name))


def trace(name):
    """A block timeline (bench/moe_trace.py's records): per kernel its blocks, first entry, last exit and median
    block time."""
    recs = collections.defaultdict(list)
    for kind, _, t0, t1 in moe_trace.records(os.path.join(D, "r2", name)):
        recs[kind].append((t0, t1))
    out = {}
    for k, rs in sorted(recs.items(), key=lambda kv: min(r[0] for r in kv[1])):
        d = sorted(b - a for a, b in rs)
        out[moe_trace.name(k)] = {"blocks": len(rs), "first_in_us": round(min(r[0] for r in rs), 2),
                                  "last_out_us": round(max(r[1] for r in rs), 2),
                                  "median_block_us": round(d[len(d) // 2], 2)}
    return out


def step_kernels(name):
    """One decode step's kernels alone (bench/ncu_step.py): kernel -> calls, us (sum), MB read."""
    step = ncu_step.step_kernels(os.path.join(D, "r3", name))
    out = collections.OrderedDict()
    for k in step:  # launch order, as the table has always listed them
        o = out.setdefault(ncu_step.short(k), {"calls": 0, "us": 0.0, "MB": 0.0})
        o["calls"] += 1
        o["us"] = round(o["us"] + ncu_step.us(k), 2)
        o["MB"] = round(o["MB"] + ncu_step.mb(k), 2)
    return {"total_us": round(sum(o["us"] for o in out.values()), 1), "kernels": out}


AB = AB_WHAT
EXP = EXPERTS_WHAT
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

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s53: the router's chain and the queues' priorities, two
measurements that did not pay) as one JSON:
    python3 bench/results/2026-12-04-s53/summary.py > bench/results/h200-2026-12-04-s53.json
Reads route-trace/'s k_route timelines ("kroutetrace" lines), the decode A/Bs of route-trace/, rp/ and qprio/,
rp/'s bits check and the first top-k layer's FFN in the node traces of rp/ and qprio/; standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, ffn, ktrace_step, x_floor  # noqa: E402


def route_phases():
    """Token 0's k_route phases in each route-trace/ run (us): entry to the PDL wait's return, to the scores, to
    the rounds' end, to the end. The first lines' stamps were printed against a stale record's entry (the
    printer fixed since): only their differences are used here."""
    out = {}
    for f in sorted(os.listdir(os.path.join(D, "route-trace"))):
        if not f.startswith("trace-"):
            continue
        for ln in open(os.path.join(D, "route-trace", f)):
            if ln.startswith("kroutetrace 0 "):
                v = [float(x) for x in ln.split()[4:]]
                out[f[6:-4]] = {"wait": round(v[1] - v[0], 2), "scores": round(v[2] - v[1], 2),
                                "rounds": round(v[3] - v[2], 2), "end": round(v[4] - v[3], 2),
                                "total": round(v[4] - v[0], 2)}
    return out


def lines(call, name):
    p = os.path.join(D, call, name)
    return [ln.strip() for ln in open(p)] if os.path.exists(p) else []


rp = call_rounds(D, "rp")
print(json.dumps({
    "session": "s53 (no kernel change landed: the router's chain shortened and the queues' priorities, both even in "
               "decode; their code in rp/route-plan.diff and qprio/qprio.diff)",
    "machine": "one NVIDIA H200 per call (calls landed on different machines: compare within a call only)",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B",
    "k_route_phases_us": {
        "what": "token 0's warp in the last k_route launch of a 64-step decode (-DROUTE_TRACE build of c9c7bef, "
                "s52's next/run.sh), three runs at batch 1 and 8",
        "runs": route_phases(),
        "decode_ms_traced_against_plain": call_rounds(D, "route-trace"),
    },
    "router_chain": {
        "what": "k_route with its bias before the PDL wait, its rounds by redux.sync and, at up to 4 tokens, the "
                "experts' plan (no k_moe_plan), the gate's k_mma_bf16 triggering its dependents (new) against none "
                "of it (old: DSV4_ROUTE_PLAN=0 DSV4_ROUTE_RX=0 DSV4_MMA_TRIG=0) and all but the plan (noplan), "
                "the same binary, three rounds",
        "decode_ms": rp,
        "batch1_x_floor": {v: x_floor(rp["b1"][v]["from_third_mean"], 1) for v in ("new", "old")},
        "batch16_x_floor": {v: x_floor(rp["b16"][v]["from_third_mean"], 16) for v in ("new", "old")},
        "bits": lines("rp", "bits.txt"),
        "ffn_new_b1_us": ffn(os.path.join(D, "rp", "kt-new-b1.csv.gz")),
        "trace_step": ktrace_step(os.path.join(D, "rp", "kt-new-b1.txt")),
    },
    "queue_priorities": {
        "what": "DSV4_QPRIO: the main queue's blocks first (q1), the side queue's (q2), neither (q0), every "
                "cuda_launch carrying its stream's priority, the same binary, three rounds",
        "decode_ms": call_rounds(D, "qprio"),
        "batch1_x_floor": {v: x_floor(call_rounds(D, "qprio")["b1"][v]["from_third_mean"], 1) for v in ("q0", "q1", "q2")},
        "ffn_b1_us": {v: ffn(os.path.join(D, "qprio", f"kt-{v}-b1.csv.gz")) for v in ("q0", "q1")},
    },
}, indent=1))

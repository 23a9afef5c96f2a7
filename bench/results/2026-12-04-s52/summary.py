#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s52: two measurements that did not land) as one JSON:
    python3 bench/results/2026-12-04-s52/summary.py > bench/results/h200-2026-12-04-s52.json
Reads the decode A/Bs of route/, rt/, rolled/, mix64/, trig/, l2/ and l2b/, the bits checks of route/, rolled/,
mix64/ and trig/, and the router's block timelines
of rt/, rt2/ and rt3/ ("routetrace" lines); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
import statistics  # noqa: E402

from summary_lib import ab_rounds, call_rounds, x_floor  # noqa: E402


def file_rounds(call, name):
    """call_rounds of another A/B file of the call than ab.txt."""
    out = {}
    for case, vs in ab_rounds(os.path.join(D, call, name), third=True).items():
        for v, runs in vs.items():
            out.setdefault(case, {})[v] = {"from_third": runs, "from_third_mean": round(statistics.mean(runs), 4)}
    return out


def lines(call, name):
    p = os.path.join(D, call, name)
    return [ln.strip() for ln in open(p)] if os.path.exists(p) else []


def last_blocks(call):
    """The last block's phases of every routetrace file of a call: {file: {entry, after_linear, after_count,
    after_fence, after_route, after_plan} in us from the launch's first block}."""
    out = {}
    for f in sorted(os.listdir(os.path.join(D, call))):
        if not f.startswith("trace-"):
            continue
        for ln in open(os.path.join(D, call, f)):
            m = re.match(r"routetrace \d+ sm \d+ last 1 (.*)", ln)
            if m:
                t = [float(x) for x in m.group(1).split()]
                keys = ["entry", "after_linear", "after_count", "after_fence", "after_route", "after_plan"]
                if len(t) == 5:  # rt/: no stamp after the fence
                    keys = ["entry", "after_linear", "after_count", "after_route", "after_plan"]
                out[f[:-4]] = dict(zip(keys, t))
    return out


route = call_rounds(D, "route")
print(json.dumps({
    "session": "s52 (no version landed: five measurements that did not pay, their code in s52-route-l2.diff, rolled/rolled.diff and trig/mix64-trig.diff)",
    "machine": "one NVIDIA H200 per call (calls landed on different machines: compare within a call only)",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B",
    "router_in_linear_last_block": {
        "what": "the gate's BF16 linear with the route and the experts' plan in the block that finishes last "
                "(fuse, the diff's default) against the linear, k_route and k_moe_plan (nofuse: "
                "DSV4_ROUTE_FUSE=0), the same binary, three rounds; rt/: also the route alone fused (noplan)",
        "route_decode_ms": route,
        "batch1_x_floor": {v: x_floor(route["b1"][v]["from_third_mean"], 1) for v in ("fuse", "nofuse")},
        "rt_decode_ms": call_rounds(D, "rt"),
        "bits": lines("route", "bits.txt"),
        "last_block_us": {"rt": last_blocks("rt"), "rt2": last_blocks("rt2"), "rt3": last_blocks("rt3")},
        "probes": "rt2: f1 no fence after the count, f2 every block runs an inlined copy of the route and plan "
                  "first; rt3: f2 with one (__noinline__) copy of their code, so the warm-up runs the last "
                  "block's very instructions",
    },
    "k_route_rolled": {
        "what": "k_route's code rolled (rolled/rolled.diff) against 4a150c1's build, three rounds: even",
        "decode_ms": call_rounds(D, "rolled"),
        "bits": lines("rolled", "bits.txt"),
    },
    "hc_post_mix64": {
        "what": "hc_post's mixing in 64-column blocks everywhere (m1) against 256-column ones (m0), three rounds; "
                "after wo_b only (m2) against m1 at batch 1, two rounds (trig/mix64-trig.diff, DSV4_WG8_TRIG=0)",
        "decode_ms_m1_m0": file_rounds("mix64", "ab-m1m0.txt"),
        "decode_ms_m2_m1": call_rounds(D, "mix64"),
        "bits": {"m1": lines("mix64", "bits-m1.txt"), "m0": lines("mix64", "bits-m0.txt")},
    },
    "wg8_trigger": {
        "what": "k_wg8 calling griddepcontrol.launch_dependents after its wait at decode's tiles, with the "
                "64-column mixing everywhere (t1), after wo_b (t2), never (t0), against neither (v70), two rounds",
        "decode_ms": call_rounds(D, "trig"),
        "bits": lines("trig", "bits.txt"),
    },
    "l2_evict_first_weights": {
        "what": "the weights' cp.async and TMA loads under an L2 evict-first policy; l2/: from a run-time "
                "fraction (DSV4_L2_EVICT=0 as the base), l2b/: a constant, against a -DDSV4_L2_NO_HINT build; "
                "batches 1 and 8 and the 4k prefill failed with an illegal instruction in k_mma_fp8s",
        "l2_decode_ms": call_rounds(D, "l2"),
        "l2b_decode_ms": call_rounds(D, "l2b"),
    },
}, indent=1))

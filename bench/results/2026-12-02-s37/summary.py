#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s37: v57) as one JSON:
    python3 bench/results/2026-12-02-s37/summary.py > bench/results/h200-2026-12-02-v57.json
Reads the calls' ab.txt (scripts/gpu_ab.sh; bench_cpu's mean from the third step), the graph-mode traces'
first lines (bench/ktrace.py) and dsv4 bench's tables (serve-ov*/serve-flash-*.txt); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, ktrace_step, x_floor  # noqa: E402






# a dsv4 bench table row: conc ok fail time req/s out-tok/s in-tok/s | TTFT p50 / p90 / p99 | TPOT ... | ITL ...
ROW = re.compile(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+\|\s+([\d.]+) /.*?\|\s+([\d.]+) /")


def served():
    """overlap on / off -> concurrency -> rounds of {output tok/s, TTFT p50, TPOT p50} (calls 4 and 5)."""
    out = {}
    for call in ("serve-ov", "serve-ov2"):
        for ov in ("on", "off"):
            for c in (1, 8, 16, 64):
                p = os.path.join(D, call, f"serve-flash-{ov}-c{c}.txt")
                if not os.path.exists(p):
                    continue
                for line in open(p):
                    m = ROW.match(line)
                    if m and int(m.group(1)) == c:
                        out.setdefault(ov, {}).setdefault(f"concurrency_{c}", []).append(
                            {"ok": int(m.group(2)), "failed": int(m.group(3)), "output_tok_s": float(m.group(4)),
                             "ttft_ms_p50": float(m.group(5)), "tpot_ms_p50": float(m.group(6))})
    return out


ov2 = call_rounds(D, "overlap2")
res = {
    "source": "bench/results/2026-12-02-s37",
    "device": "NVIDIA H200 (sm_90)",
    "what": "8 Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64, ms a step from the third "
            "step, 3 rounds alternating in one call",
    "decode_overlap": {
        "what": "call 3 (overlap2/): new = bench_cpu --overlap (dsv4_step_submit / dsv4_step_finish, follow "
                "entries), sync = dsv4_step one at a time; the same build",
        "runs": ov2,
        "per_layer_x_floor": {c: x_floor(ov2[c]["new"]["from_third_mean"], int(c[1:])) for c in ("b1", "b16", "b64")},
        "sync_per_layer_x_floor": {c: x_floor(ov2[c]["sync"]["from_third_mean"], int(c[1:]))
                                   for c in ("b1", "b16", "b64")},
        "between_replays": {"b1_overlap": ktrace_step(os.path.join(D, "overlap", "kt-ov-b1.txt")),
                            "b1_sync": ktrace_step(os.path.join(D, "overlap", "kt-sync-b1.txt")),
                            "b16_overlap": ktrace_step(os.path.join(D, "overlap2", "kt-ov-b16.txt")),
                            "b16_sync": ktrace_step(os.path.join(D, "overlap2", "kt-sync-b16.txt"))},
    },
    "decode_sampler_wave": {
        "what": "call 6 (smp-wave/): new = k_sample's greedy pass in one wave, old = DSV4_SMP_WAVE=0 (32 blocks a "
                "row); both bench_cpu --overlap",
        "runs": call_rounds(D, "smp-wave"),
    },
    "decode_sampling": {
        "what": "calls 7-8 (smp-vec/, smp-run/): bench_cpu --overlap --temperature 1 --top-p 0.9; base = main's "
                "k_sample, new = the two single-block variants (not kept)",
        "smp_vec": call_rounds(D, "smp-vec"),
        "smp_run": call_rounds(D, "smp-run"),
        "smp_coop": call_rounds(D, "smp-coop"),
        "smp_coop_what": "call 10 (smp-coop/, landed): new = the draw shared by the row's blocks (k_sample<true>, "
                         "cooperative), base = main's k_sample",
    },
    "decode_not_kept": {
        "what": "call 1 (combo/): new = k_moe16w (DSV4_MOE_WHOLE=1) + the light k_hc_post_mix, moe = k_moe16w only, "
                "hc = the light fusion only, main = neither (main's code)",
        "runs": call_rounds(D, "combo"),
    },
    "serve": {
        "what": "dsv4 serve on 8 Flash-shaped layers (--fill-random, --max-running-requests 64, --context-length "
                "1024), dsv4 bench: 64-token prompts, 32 out, 2 x concurrency requests (at least 8); --overlap on "
                "(the default) / off, calls 4 and 5 (serve-ov/, serve-ov2/: 1 + 2 rounds at 8-64, 1 at 1)",
        "rounds": served(),
    },
}
json.dump(res, sys.stdout, indent=1)
print()

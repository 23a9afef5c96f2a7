#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-02, s36: v56) as one JSON:
    python3 bench/results/2026-12-02-s36/summary.py > bench/results/h200-2026-12-02-v56.json
Reads the calls' ab.txt (scripts/gpu_ab.sh; bench_cpu's mean over every step and from the third) and the
node tables' first lines (bench/ktrace.py); standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import FLOOR, HEAD_MS, LAYERS, call_rounds, ktrace_step  # noqa: E402






def ratio(ms, batch):
    return round((ms - HEAD_MS) / LAYERS / FLOOR[batch], 3)


closing, hcfuse = call_rounds(D, "closing"), call_rounds(D, "hcfuse")
res = {
    "source": "bench/results/2026-12-02-s36",
    "device": "NVIDIA H200 (sm_90)",
    "what": "8 Flash-shaped layers, reference numerics, bench_cpu --prompt 16 --decode 64, ms a step from the third "
            "step, 3 rounds alternating in one call; base = b5c45a9 (s35's head)",
    "decode_closing": {
        "what": "call 4 (closing/): new = the head (6d70ebd; the queues' priority knob of the call at its default, "
                "off), qp1 / qp2 = DSV4_QPRIO=1 / 2 (not kept), noearly = DSV4_PROJ_EARLY=0",
        "runs": closing,
        "per_layer_x_floor": {c: ratio(closing[c]["new"]["from_third_mean"], int(c[1:])) for c in ("b1", "b16")},
        "base_per_layer_x_floor": {c: ratio(closing[c]["base"]["from_third_mean"], int(c[1:])) for c in ("b1", "b16")},
    },
    "decode_hcfuse": {
        "what": "call 5 (hcfuse/): new = wip/hc-post-mix (k_hc_post_mix, not kept), nofuse = DSV4_HC_FUSE=0, the "
                "head's code",
        "runs": hcfuse,
    },
    "decode_early": {
        "what": "call 3 (early/): new = the early fork with k_mma_bf16s (P > 1), noearly = DSV4_PROJ_EARLY=0, nobf = "
                "DSV4_MMA_STREAM_BF=0 (the early fork alone), base",
        "runs": call_rounds(D, "early"),
    },
    "decode_bf16s": {
        "what": "call 2 (bf16s/): new = k_mma_bf16s wherever the streamed rule allowed (the LM head too), nobf = "
                "DSV4_MMA_STREAM_BF=0, base",
        "runs": call_rounds(D, "bf16s"),
    },
    "decode_sample_split": {
        "what": "call 1 (sample-split/): new = k_sample over up to 32 blocks a row, base = b5c45a9",
        "runs": call_rounds(D, "sample-split"),
    },
    "node_tables": {
        "what": "bench/ktrace.py's first line of each node-mode trace at batch 1 (us; node tracing slows the host's "
                "launches, so only the replay is comparable)",
        "early new": ktrace_step(os.path.join(D, "early", "kt-new-b1.txt")),
        "early noearly": ktrace_step(os.path.join(D, "early", "kt-noearly-b1.txt")),
        "closing": ktrace_step(os.path.join(D, "closing", "kt-b1.txt")),
        "closing qp1": ktrace_step(os.path.join(D, "closing", "kt-qp1-b1.txt")),
        "hcfuse": ktrace_step(os.path.join(D, "hcfuse", "kt-b1.txt")),
    },
}
json.dump(res, sys.stdout, indent=1)
print()

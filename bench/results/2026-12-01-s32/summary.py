#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, s32: v52) as one JSON:
    python3 bench/results/2026-12-01-s32/summary.py > bench/results/h200-2026-12-01-v52.json
Reads the calls' ab.txt (scripts/gpu_ab.sh), the attention tables (csa-early/attn-*.txt: bench_kernels
--attn-only), the linear tables (wgf8-probe/lin-wgf8-*.txt, wgf8-dec/lin-dec-1.txt: bench_kernels --linear-only)
and the ncu details of k_attn_one (attn-ncu/details.txt); standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import AB_WHAT, attn, call_ab, linears  # noqa: E402


def ncu_details(path, keys=("Duration", "Issue Slots Busy", "Achieved Occupancy", "Grid Size", "Cluster Size")):
    out = {}
    for line in open(path):
        for k in keys:
            m = re.match(rf"\s+{k}\s+(\S+)?\s+([\d.]+)$", line)
            if m and k not in out:
                out[k] = float(m.group(2))
    return out


AB = AB_WHAT
res = {
    "source": "bench/results/2026-12-01-s32",
    "device": "NVIDIA H200 (sm_90)",
    "csa_early": {
        "what": "CSA's one-pass attention at 1-2 tokens with its part split from the predicted count, the window "
                "rows and the slot's page table before the PDL wait (kept, 6247eaf); base = 5f951dd",
        "attention_alone_us": {v: attn(os.path.join(D, "csa-early", f"attn-{v}.txt")) for v in ("new", "base")},
        "decode": {"layout": AB, "runs": call_ab(D, "csa-early")},
    },
    "relaxed_exit": {
        "what": "the clusters' last barrier with a relaxed arrive (kept: no MEMBAR.ALL.GPU before it); base = 8eb7a27",
        "attention_alone_us": {v: attn(os.path.join(D, "relaxed-exit", f"attn-{v}.txt")) for v in ("new", "base")},
        "linears_alone": {v: linears(os.path.join(D, "relaxed-exit", f"lin-{v}.txt"),
                                     ("wq_a", "wkv", "wo_a group", "shared w1", "shared w2")) for v in ("new", "base")},
        "decode": {"layout": AB, "runs": call_ab(D, "relaxed-exit")},
    },
    "nopack": {
        "what": "a bound, not a change: the activation packs' launches skipped at decode (wrong outputs, the same "
                "work; exp/nopack): wg8 = k_wg8_pack (reading a zero buffer), moe = k_moe_pack16, all = every pack",
        "decode": {"layout": AB, "runs": call_ab(D, "nopack")},
    },
    "skip": {
        "what": "bounds, not changes: kernels left out of the decode graphs (DSV4_SKIP; wrong outputs, the same "
                "work): plan = k_moe_plan, route = k_route, rp = both, mix = k_hc_mix",
        "decode": {"layout": AB, "runs": call_ab(D, "skip")},
    },
    "l2pf": {
        "what": "measured, not kept: the next big linears' weights prefetched into L2 on a stream of their own "
                "(DSV4_L2PF bits: 1 wq_b at the layer's start, 2 wo_a and 4 wo_b after wq_b, 8 the shared "
                "expert, 16 wq_a + wkv); logits with every bit byte for byte",
        "decode": {"layout": AB + "; pN = DSV4_L2PF=N", "runs": call_ab(D, "l2pf")},
    },
    "attn_ncu": {
        "what": "k_attn_one (CSA 640 rows, 4k, batch 1) alone under ncu --set full (base clocks)",
        "details": ncu_details(os.path.join(D, "attn-ncu", "details.txt")),
    },
    "wgf8_probe": {
        "what": "the prefill's k_wgf8 (64-token tiles) forced at decode (DSV4_WGF8=1) for the FP8 linears with "
                "unquantised activations (wo_a in reference numerics; every FP8 linear in plain)",
        "linears_alone": {v: linears(os.path.join(D, "wgf8-probe", f"lin-wgf8-{v}.txt")) for v in ("0", "1")},
        "decode": {"layout": AB + "; wgf8 = DSV4_WGF8=1", "runs": call_ab(D, "wgf8-probe")},
    },
    "wgf8_decode": {
        "what": "measured, not kept: k_wgf8 with 8-, 16- and 32-token tiles and a 7-stage ring up to 32 tokens "
                "(wgf8-dec.diff; the same bits: suite, memchecks, logits byte for byte); base = 8eb7a27",
        "linears_alone": linears(os.path.join(D, "wgf8-dec", "lin-dec-1.txt")),
        "decode": {"layout": AB, "runs": call_ab(D, "wgf8-dec")},
    },
}
json.dump(res, sys.stdout, indent=1)
print()

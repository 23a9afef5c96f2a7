#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s58: hc_pre's collapse over a cluster, the q norm writing
wq_b's pack, the experts' loop two groups a step, NVFP4's experts on 2-pair tiles) as one JSON:
    python3 bench/results/2026-12-04-s58/summary.py > bench/results/h200-2026-12-04-s58.json
Reads the decode A/Bs, the logits check and the traces' step lines; standard library only."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_lines, call_rounds, experts_alone, ktrace_step, means, suite  # noqa: E402


def pipes(path):
    """ncu's details page: per k_moe16 launch (gate_up, then down), the units' throughput and the pipes' activity."""
    keys = {"L1/TEX Cache Throughput": "l1tex", "L2 Cache Throughput": "l2", "DRAM Throughput": "dram",
            "Issue Slots Busy": "sm_issue", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": "alu",
            "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": "lsu",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor_cycles",
            "Achieved Active Warps Per SM": "warps_per_sm"}
    out, cur = {}, None
    for ln in open(path):
        if "k_moe16<" in ln:
            cur = out.setdefault("down" if "k_moe16<4, 1, 1," in ln else "gate_up", {})
        elif cur is not None:
            for k, name in keys.items():
                m = re.match(r"\s+" + re.escape(k) + r"\s+\S+\s+([\d.,]+)$", ln)
                if m:
                    cur[name] = float(m.group(1).replace(",", ""))
    return out


def probe_modes(path):
    """stream_probe's moe rows at three stages and four blocks an SM: "mode FMAs rbk" -> us."""
    out = {}
    for ln in open(path):
        f = ln.split()
        if len(f) == 10 and f[0] == "moe" and f[2] == "3" and f[6] == "4" and f[3] in ("0", "256"):
            out[f"{f[1]} {f[3]} {f[4]}"] = float(f[8])
    return out


print(json.dumps({
    "session": "s58, 2026-12-04",
    "machine": "one H200 a call",
    "decode_setup": "8 Flash-shaped layers (dsv4 mkmodel --preset flash --layers 8 --sparse), reference numerics, "
                    "--fill-random, 16-token prompt, 64 decode steps, bench_cpu --overlap; ms a step from the third "
                    "step on; rounds alternating in one call",
    "hccl": {"what": "hccl.diff (not kept): hc_pre's / hc_head's collapse as a cluster of 8 one-warp blocks a token "
                     "up to 64 tokens (new) against the one-block kernel (cl0: DSV4_HC_CL=0), one binary",
             "decode_ms": means(call_rounds(D, "hccl")), "bits": call_lines(D, "hccl", "bits.txt"),
             "traces": {t: ktrace_step(os.path.join(D, "hccl", f"kt-{t}.txt")) for t in ("new-b1", "cl0-b1")}},
    "nvbp": {"what": "8 layers with NVFP4 experts: 2-pair tiles forced (bp1: DSV4_MOE_BP=1) against the 8-pair tiles "
                     "the tree took then (new), 4e84d0b's build",
             "decode_ms": means(call_rounds(D, "nvbp"))},
    "npack": {"what": "npack.diff's first version (not kept): the q norm writes wq_b's FP8 pack (k_rmsnorm_pack, "
                      "the row read back from global memory, dependents launched at its start), new, against the "
                      "norm and the pack as two launches (np0: DSV4_NORM_PACK=0); b4n: 8 layers with NVFP4 experts, "
                      "the tree (2-pair tiles at batch 4) against 8-pair tiles (bp0: DSV4_MOE_BP=0)",
              "decode_ms": means(call_rounds(D, "npack")), "bits": call_lines(D, "npack", "bits.txt"),
              "trace_new_b1": ktrace_step(os.path.join(D, "npack", "kt-new-b1.txt"))},
    "npack2": {"what": "npack/ with the row from shared memory", "decode_ms": means(call_rounds(D, "npack2")),
               "bits": call_lines(D, "npack2", "bits.txt"),
               "trace_new_b1": ktrace_step(os.path.join(D, "npack2", "kt-new-b1.txt"))},
    "npack3": {"what": "npack2/'s kernel letting the linear launch after its PDL wait (new), at its start (t0) or "
                       "after its last store (t2), against two launches (np0); two rounds",
               "decode_ms": means(call_rounds(D, "npack3"))},
    "il": {"what": "il.diff (not kept): the experts' loop two groups a step (IL: DSV4_MOE_BP=1 DSV4_MOE_IL=1); this "
                   "call's IL launches failed (their shared-memory attribute unset), its 2-pair tiles without IL "
                   "(bp1) against the tree (new) stand",
           "decode_ms": means(call_rounds(D, "il")), "experts_alone_us": experts_alone(D, "il")},
    "il2": {"what": "il/ with the attribute set: IL (il) against the tree (new); test_ops_cuda passed with IL forced",
            "decode_ms": means(call_rounds(D, "il2")), "experts_alone_us": experts_alone(D, "il2")},
    "pipes": {"what": "ncu at 1 token, gate / up then down (det-pipes.txt, ncu's clocks ~1.34 GHz): units' throughput "
                      "and pipes' activity, % of peak", "units": pipes(os.path.join(D, "pipes", "det-pipes.txt"))},
    "next": {"what": "run in s59: stream_probe's gate / up grid at 1 token, events' us (an empty kernel ~2.8), "
                     "by mode (fma: 0 / 256 FMAs a group; dec: k_moe16's decode; mma: its decode and MMAs) and row "
                     "blocks an expert (128: the real grid, 53.5 MB; 88: one wave, 36.8 MB), beside the experts alone",
             "probe_us": probe_modes(os.path.join(D, "next", "probe.txt")), "experts_alone_us": experts_alone(D, "next")},
    "verify": {"what": "the landed tree (NVFP4's 2-pair tiles at batch 4): the GPU suite with quick memchecks and "
                       "the logits against 9dc41f3's build", "suite": suite(D, "verify"),
               "bits": call_lines(D, "verify", "bits.txt")},
}, indent=1))

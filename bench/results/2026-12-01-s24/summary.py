#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-01, v44) as one JSON:
    python3 bench/results/2026-12-01-s24/summary.py > bench/results/h200-2026-12-01-v44.json
Reads the calls' ab.txt (scripts/gpu_ab.sh: "case[-variant] (round): X ms/step"), bench_kernels' attention and
routed-experts tables, the calls' summary.txt and dsv4 bench's JSON; standard library only. Rooflines as
summary_lib's (the per-layer weight-bytes floor)."""
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import ATTN_ROW, call_ab, experts, head, pick, probe_runs, values  # noqa: E402


def ab(call):
    """case -> variant -> [ms per step by round] from a call's ab.txt."""
    return call_ab(D, call)


def attn_probe():
    """bench_kernels --attn-only: us per call by row kind, batch and context, with and without the probe."""
    return probe_runs(os.path.join(D, "verify"), r"attn-p(\d)-(\d)\.txt",
                      ATTN_ROW, lambda f: f"{f.group(1)} ({f.group(2)} rows) batch {f.group(3)} context {f.group(4)}", 5)


def experts_runs(call, pat):
    """kind -> batch -> [us by run] over the files of a call whose names match pat (a regex with group 1 the
    variant)."""
    res = {}
    for name in sorted(os.listdir(os.path.join(D, call))):
        m = re.fullmatch(pat, name)
        if not m:
            continue
        for kind, by in experts(os.path.join(D, call, name)).items():
            for b, r in by.items():
                res.setdefault(m.group(1), {}).setdefault(kind, {}).setdefault(b, []).append(r["us"])
    return res


AB = "decode_ms_per_step by case (bN: batch N, 8 Flash layers, prompt 16, 32 steps) and variant, alternating " \
     "(scripts/gpu_ab.sh)"
EXP = "bench_kernels --experts-only: us per call of the six (batch 1) to 193 experts' op, by variant, kind " \
      "(ref. = reference numerics, MXFP4 = plain) and batch, one list entry a run"
cv = values(os.path.join(D, "closing", "summary.txt"))
vv = values(os.path.join(D, "verify-rb", "summary.txt"))
res = {
    "source": "bench/results/2026-12-01-s24",
    "device": "NVIDIA H200 (sm_90)",
    "attn_pv_cluster_probe": {
        "what": "wip/attn-pv-probe on 57e2ac9 (measurement only): DSV4_ATTN_PROBE=1 launches k_attn_pv's parts "
                "without their 8-block cluster (parts stored over each other: wrong results); 'cluster' is the "
                "same build without the knob. bench_kernels --attn-only --batch 1,8, three runs each; decode "
                "new (57e2ac9) / probe / base (c9a9cc1)",
        "attention_us": attn_probe(), "decode": ab("verify"), "layout": AB},
    "moe_rb_first_not_kept": {
        "what": "moe-rb.diff: k_moe16 with two row blocks a block through one ring, its loop rewritten over both "
                "(more instructions a group), chosen where one row block a block is more than one wave and two "
                "at most one (batch 1); rb0 = that choice, rb1 / rb2 forced",
        "experts_us": experts_runs("moe-rb", r"moe-rb(\d)-\d\.txt"), "decode": ab("moe-rb"), "layout": AB,
        "experts_layout": EXP},
    "moe_rb": {
        "what": "8ec6537's kernel (the row-block loop unrolled, the hot loop as before) with a 2-wave threshold "
                "('auto'; the commit's is 16 waves: batch 64 only), DSV4_MOE_RB=1 ('rb1'), c9a9cc1 ('base'); "
                "ntt2 = DSV4_MOE_NTT=2 at batch 64 (the two-n-tile instances, whose registers changed)",
        "experts_us": experts_runs("moe-rb2", r"moe-(auto|rb1|base|ntt2-new|ntt2-base)(?:-\d)?\.txt"),
        "decode": ab("moe-rb2"), "layout": AB, "experts_layout": EXP},
    "moe_rb_committed": {
        "what": "8ec6537 (16-wave threshold): bench_kernels --experts-only, DSV4_MOE_RB=0 (auto) against 1, "
                "twice; decode at batch 16 / 64 likewise; and the closing call's three rounds of the 2-wave build",
        "experts_us": experts_runs("verify-rb", r"moe-rb(\d)-\d\.txt"),
        "decode_ms": {f"batch {b}": {f"rb{v}": pick(vv, rf"rb{v}-b{b}-\d") for v in (0, 1)} for b in (16, 64)},
        "decode_ms_closing_2wave": {f"batch {b}": {f"rb{v}": pick(cv, rf"rb{v}-b{b}-\d") for v in (0, 1)}
                                    for b in (16, 64)}},
    "head": head(os.path.join(D, "closing"),
                 "the closing call (57e2ac9 + k_moe16 RB = 2 at the 2-wave threshold: batch 16 and 64 took it; the "
                 "committed 16-wave threshold gives batch 16 one row block, its rb1 runs), two runs each"),
}
json.dump(res, sys.stdout, indent=1)
print()

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s76: why wo_a's kernel waits for the attention - the kv_store
fork ruled out, PDL found one level deep, wo_a's pack moved into the attention's epilogue and measured), with the two
s75-prepared calls run this session (records in ../2026-12-06-s75/kvl/ and pdl/), as one JSON:
    python3 bench/results/2026-12-06-s76/summary.py > bench/results/mixed-2026-12-06-s76.json
Standard library only."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import DECODE_OVL_WHAT, call_lines, call_rounds, machine, verdicts, wo_a_start  # noqa: E402

S75 = os.path.join(os.path.dirname(D), "2026-12-06-s75")


def pdl_table(path):
    """pdl_probe's rows: 'mode | A | fork | Z' -> [B - A start, C - A end, C - B start] in us."""
    out = {}
    for ln in open(path):
        m = re.match(r"(stream|graph)\s+(\d+, (?:no cl|cl \d+))\s+(yes|no)\s+(before|none)\s+([-\d.]+) us\s+([-\d.]+) us"
                     r"\s+([-\d.]+) us", ln)
        if m:
            out[" | ".join(m.group(1, 2)) + f" | fork {m.group(3)} | Z {m.group(4)}"] = [float(m.group(i))
                                                                                       for i in (5, 6, 7)]
    return out


out = {"session": "s76, 2026-12-06"}
kvl = os.path.join(S75, "kvl")
out["kvl"] = {
    "what": "s75's kvl/ (branch wip/kv-late, cb274341): test_ops_cuda with the prefill kernels through the cluster "
            "barrier (main's 14270683, its first GPU run); DSV4_KV_STORE_LATE=1 (the window's rows stored beside "
            "the shared expert): the logits against main's build, test_gpu_vs_cpu, node traces at batch 1 with and "
            "without it (wo_a's start), " + DECODE_OVL_WHAT + ", default against late",
    "machine": machine(kvl), "ops_prefill_barrier": verdicts(kvl, ["ops-prefill-a0.txt.gz"]),
    "bits": call_lines(S75, "kvl", "bits.txt"), "gpu_vs_cpu_late": verdicts(kvl, ["gpu_vs_cpu-late.txt.gz"]),
    "wo_a": {t: wo_a_start(os.path.join(kvl, f"kt-{t}.csv.gz")) for t in ("b1", "late-b1")},
    "decode_ms": call_rounds(S75, "kvl"),
    "verdict": "not the cause: wo_a still starts at the attention's end; batch 1 +1.4 %: not landed"}
pdl = os.path.join(S75, "pdl")
out["pdl"] = {
    "what": "bench/pdl_probe.cu: a chain A -> B -> C under programmatic dependent launch, B triggering its "
            "dependents at its start; medians of 50 repeats of B's start after A's start, C's start after A's end, "
            "C's start after B's start (us)",
    "machine": machine(pdl), "table": pdl_table(os.path.join(pdl, "pdl.txt")),
    "verdict": "C never starts before A ends (0.2-1.0 us after, every variant): PDL is one level deep"}
opk = os.path.join(D, "opk")
out["opk"] = {
    "what": "branch wip/opack (ec1d4b93): wo_a's activation pack in k_attn_one's epilogue (be->attn_next, "
            "cuda_opack_take), wo_a's kernel right behind the attention, new against a0 (DSV4_ATTN_OPACK=0: "
            "k_mma_pack as before, the same binary); test_ops_cuda, the logits against main's build (decode steps "
            "included), test_gpu_vs_cpu, test_golden; a node trace at batch 1; " + DECODE_OVL_WHAT,
    "machine": machine(opk), "tests": verdicts(opk, ["ops.txt.gz", "test_gpu_vs_cpu.txt.gz", "test_golden.txt.gz"]),
    "bits": call_lines(D, "opk", "bits.txt"), "wo_a": {"b1": wo_a_start(os.path.join(opk, "kt-b1.csv.gz"))},
    "decode_ms": call_rounds(D, "opk"),
    "verdict": "wo_a starts 2.4 us into the attention but the attention takes 12.75 us against 9.0; batch 1 +0.7 %"}
opl = os.path.join(D, "opl")
if os.path.exists(os.path.join(opl, "machine.txt")):
    out["opl"] = {
        "what": "wip/opack with k_attn_one triggering wo_a once its rows are in (new), right after its wait (early, "
                "DSV4_ATTN_OPACK=2) and a0 (DSV4_ATTN_OPACK=0); a node trace at batch 1; " + DECODE_OVL_WHAT,
        "machine": machine(opl), "wo_a": {"b1": wo_a_start(os.path.join(opl, "kt-b1.csv.gz"))},
        "decode_ms": call_rounds(D, "opl")}
print(__import__("json").dumps(out, indent=1, ensure_ascii=False))

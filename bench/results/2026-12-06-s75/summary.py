#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s75: k_attn_pv's parts pushed a float a send, measured and
dropped; the packs' hop bounded again; the K-split linears' exchange in 16-byte sends; the tree against s57's build
in one call) as one JSON:
    python3 bench/results/2026-12-06-s75/summary.py > bench/results/mixed-2026-12-06-s75.json
Standard library only."""
import glob
import gzip
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import (DECODE_OVL_WHAT, attn, call_lines, call_rounds, experts_ref, lin_rounds,  # noqa: E402
                         serve, suite, wo_a_start)


def machine(call):
    """The call's GPU as its machine.txt names it (the line after a header, or the only one)."""
    lines = [ln.strip() for ln in open(os.path.join(D, call, "machine.txt")) if ln.strip()]
    return lines[1] if lines[0].startswith("name,") else lines[0]


def ops(call):
    """test_ops_cuda's verdict per configuration (ops-NAME.txt.gz)."""
    return {os.path.basename(f)[4:-7]: [ln.strip() for ln in gzip.open(f, "rt") if re.match(r"\[  (PASSED|FAILED)",
                                                                                              ln)]
            for f in sorted(glob.glob(os.path.join(D, call, "ops-*.txt.gz")))}


def memchecks(call):
    return {os.path.basename(f): [ln.strip() for ln in open(f) if "ERROR SUMMARY" in ln]
            for f in sorted(glob.glob(os.path.join(D, call, "san-*.txt")))}


def attn_ab(call):
    """bench/attn_ab.py's table (attn-ab.txt) as 'case bB' -> {variant: [us by round]}."""
    out = {}
    for ln in call_lines(D, call, "attn-ab.txt"):
        m = re.match(r"(.+?)\s+(b\d+)\s+(.*?)\s+(-?[\d.]+%)$", ln)
        if m:
            vs = re.findall(r"([a-z0-9]+) ([\d.]+) ([\d.]+)", m.group(3))
            out[f"{m.group(1)} {m.group(2)}"] = {v: [float(a), float(b)] for v, a, b in vs}
    return out


out = {"session": "s75, 2026-12-06"}
out["pvp"] = {
    "what": "branch wip/pv-push (pvp.diff): k_attn_pv's PARTS join (4-8 tokens) by st.async, a float a send, new "
            "against a0 (DSV4_ATTN_PV_ASYNC=0, the cluster barrier, the same binary); the whole GPU suite first "
            "(the first GPU run of main's 8b1f5d84, 511c8825, 2f599e2d); the attention alone at 4 / 8 tokens "
            "(bench_kernels --attn-only, us a call by round); " + DECODE_OVL_WHAT,
    "machine": machine("pvp"), "suite": suite(D, "pvp"), "bits": call_lines(D, "pvp", "bits.txt"),
    "memcheck": memchecks("pvp"), "attention_us": attn_ab("pvp"), "decode_ms": call_rounds(D, "pvp"),
    "verdict": "23-41 % slower alone, decode +2-3 % at batch 4 / 8: not landed"}
out["npk"] = {
    "what": "s74's probe: no k_wg8_pack in the captured graphs (-DWG_PROBE_NO_PACK, s74 npk/npk.diff; timing only) "
            "as 'probe', against the tree; " + DECODE_OVL_WHAT,
    "machine": machine("npk"), "decode_ms": call_rounds(D, "npk"),
    "verdict": "even at batch 1 / 4, -0.5 % at 16: the packs' hop is hidden (as s32's nopack/ found)"}
lin, copy = lin_rounds(os.path.join(D, "v4"))
out["v4"] = {
    "what": "the K-split linears' st.async exchange in 16-byte sends, thread-major (895af82f, v4.diff): new against "
            "base (2f599e2d: a float a send) and a0 (DSV4_LIN_ASYNC=0); test_ops_cuda four ways, the logits against "
            "base, memcheck on k_wg8; the linears alone (bench_kernels --linear-only, reference us a call by "
            "round); " + DECODE_OVL_WHAT,
    "machine": machine("v4"), "ops": ops("v4"), "bits": call_lines(D, "v4", "bits.txt"), "memcheck": memchecks("v4"),
    "copy_gb_s": copy, "linears_reference_us": lin, "decode_ms": call_rounds(D, "v4")}
if os.path.exists(os.path.join(D, "snap", "machine.txt")):
    lin, copy = lin_rounds(os.path.join(D, "snap"))
    s = {"what": "the tree (the 16-byte sends up to 16-token tiles) against s57's build 0fd1e38b in one call: "
                 "test_ops_cuda three ways, memcheck on k_wg8 at 64 tokens; the linears alone at 32 / 64 tokens "
                 "against main's 2f599e2d; the experts alone and the attention (new); " + DECODE_OVL_WHAT +
                 "; dsv4 serve on 8 Flash layers driven by dsv4 bench (64-token prompts, 32 out)",
         "machine": machine("snap"), "ops": ops("snap"), "memcheck": memchecks("snap"), "copy_gb_s": copy,
         "linears_reference_us": lin, "decode_ms": call_rounds(D, "snap"),
         "serve_new": serve(os.path.join(D, "snap"), "serve-new"),
         "serve_s57": serve(os.path.join(D, "snap"), "serve-s57")}
    if os.path.exists(os.path.join(D, "snap", "experts.txt")):
        s["experts_reference"] = experts_ref(os.path.join(D, "snap", "experts.txt"))
        s["copy_experts_gb_s"] = [int(m) for m in re.findall(r"copy (\d+) GB/s",
                                                            open(os.path.join(D, "snap", "experts.txt")).read())]
    if os.path.exists(os.path.join(D, "snap", "attn.txt")):
        s["attention_us"] = attn(os.path.join(D, "snap", "attn.txt"))
    out["snap"] = s
if os.path.exists(os.path.join(D, "bits", "machine.txt")):
    out["bits"] = {"what": "the landed build's logits against 2f599e2d's byte for byte (scripts/gpu_bits.sh), "
                           "test_golden, test_gpu_vs_cpu", "machine": machine("bits"),
                   "bits": call_lines(D, "bits", "bits.txt"),
                   "tests": {t: [ln.strip() for ln in gzip.open(os.path.join(D, "bits", t + ".txt.gz"), "rt")
                                 if re.match(r"\[  (PASSED|FAILED)", ln)] for t in ("test_golden", "test_gpu_vs_cpu")}}



if os.path.exists(os.path.join(D, "wot", "machine.txt")):
    out["wot"] = {"what": "node traces of the 64-step decode at batch 1 (scripts/gpu_ktrace.sh): when wo_a's kernel "
                          "starts, for the tree, DSV4_MMA_GPW=32 (half its grid) and DSV4_MMA_STREAM=0 (k_mma_fp8); "
                          + DECODE_OVL_WHAT + ", the tree against DSV4_MMA_GPW=32",
                  "machine": machine("wot"),
                  "wo_a": {t: wo_a_start(os.path.join(D, "wot", f"kt-{t}.csv.gz")) for t in ("b1", "g32-b1", "s0-b1")},
                  "decode_ms": call_rounds(D, "wot")}
print(__import__("json").dumps(out, indent=1, ensure_ascii=False))

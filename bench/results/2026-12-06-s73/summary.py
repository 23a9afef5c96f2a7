#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s73: k_attn_one's parts' sums by st.async at one token, what its
cluster barrier and its rows' copy cost, and what the linears' cluster barriers cost) as one JSON:
    python3 bench/results/2026-12-06-s73/summary.py > bench/results/mixed-2026-12-06-s73.json
Standard library only."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import DECODE_OVL_WHAT, attn, call_lines, call_rounds, suite, table_rounds  # noqa: E402

H100 = "H100 80GB HBM3, 1,980 MHz"
ATTN = ("the attention alone (bench_kernels --attn-only --batch 1,2,3 --contexts ...; 64 heads of 512, BF16 rows, "
        "reference numerics), µs a call by round")


def trace(call, tag):
    """bench/af_trace.py's table of an AF_TRACE build's run (call/tag.tab): the CSA table's lines."""
    p = os.path.join(D, call, tag + ".tab")
    if not os.path.exists(p):
        return []
    out, on = [], False
    for ln in open(p):
        if ln.startswith("CSA"):
            on = True
        elif ln[:3] in ("HCA",) and on:
            break
        if on:
            out.append(ln.rstrip())
    return out


def call(name, what, traces=()):
    r = {"what": what, "machine": H100, "attention_us": table_rounds(D, name, attn),
         "attn_ab": call_lines(D, name, "attn-ab.txt")}
    if os.path.exists(os.path.join(D, name, "ab.txt")):
        r["decode_ms"] = call_rounds(D, name)
    for t in traces:
        r["trace_" + t] = trace(name, t)
    return r


out = {
    "session": "s73, 2026-12-06",
    "hb": call("hb", ATTN + ": def (889ceb45's defaults), half (a probe build copying half of each cached row: "
               "timing only), hb16 / half16 with DSV4_ATTN_ONE8_ROWS=0 - which reads as unset, so they are def and "
               "half again (void); decode " + DECODE_OVL_WHAT + " at batch 1-2, 4k / 128k"),
    "tr": call("tr", "k_attn_one's phases at one token (AF_TRACE builds, bench/af_trace.py, cycles, the median over "
               "calls), as it is (trace) and copying half of each row (half); trace16 / half16 void as in hb/",
               ("trace", "half")),
    "rx": call("rx", ATTN + ": def, relax (a probe build: the parts' cluster barrier without its release, i.e. "
               "without MEMBAR.ALL.GPU - timing only), hb16 / relax16 with 16 heads a block (DSV4_ATTN_ONE8_ROWS=1)",
               ("trace", "relax", "relax16")),
    "ps": call("ps", ATTN + ": push (b0b22d7e: the parts' sums by st.async onto an mbarrier a block, at every shape "
               "then), bar (DSV4_ATTN_ONE_ASYNC=0: the barrier), push16 / bar16 with 16 heads a block, base "
               "(a0984e27's build); decode " + DECODE_OVL_WHAT),
    "fin": call("fin", ATTN + ": new (9a47c086: st.async at one token with parts of 96 rows or more, the barrier "
                "elsewhere), a0 (never), a2 (wherever it fits), base (a0984e27's build); decode " + DECODE_OVL_WHAT),
}
out["csp"] = call("csp", ATTN + " (one token: new, a0 = DSV4_ATTN_ONE_ASYNC=0), then the linears alone (bench_kernels "
                  "--linear-only --batch 1,16,64: lin-*.txt) and decode " + DECODE_OVL_WHAT + " at batch 1 / 16: new "
                  "(3af13f6f's build) against relax (a probe build of csp/csp.diff: the K-split linears' cluster sums "
                  "- cluster_sum_parts, wg_store - with the barrier's arrive relaxed, no MEMBAR.ALL.GPU: timing only)")
out["ps"]["checks"] = {"test_ops_cuda": "passed (13 tests) with push everywhere and with 16 heads a block "
                                        "(ops_cuda.txt.gz, ops_cuda-h16.txt.gz)",
                       "bits_h16": call_lines(D, "ps", "bits-h16.txt")}
out["fin"]["suite"] = suite(D, "fin")
out["fin"]["bits"] = call_lines(D, "fin", "bits.txt")
out["fin"]["memcheck"] = [ln.strip() for f in ("san-k_attn_one.txt", "san-k_attn_one-a2.txt")
                          for ln in open(os.path.join(D, "fin", f)) if "ERROR SUMMARY" in ln]
print(__import__("json").dumps(out, indent=1, ensure_ascii=False))

#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s74: every K-split linear's parts' sums by st.async instead of a
cluster barrier, two forms of k_wg8's, and where a batch-1 layer's time goes on an H100) as one JSON:
    python3 bench/results/2026-12-06-s74/summary.py > bench/results/mixed-2026-12-06-s74.json
Standard library only."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import (DECODE_OVL_WHAT, call_lines, call_rounds, ktrace_step, lin_rounds,  # noqa: E402
                         prefills, suite)

H100 = "H100 80GB HBM3, 1,980 MHz"
LIN = ("the linears alone (bench_kernels --linear-only --batch 1,16,64), reference numerics' us a call by round "
       "(lin-VARIANT-ROUND.txt; the plain column is in the files)")


def call(name, what, lin=True):
    r = {"what": what, "machine": H100}
    if os.path.exists(os.path.join(D, name, "ab.txt")):
        r["decode_ms"] = call_rounds(D, name)
    if lin:
        r["linears_reference_us"], r["copy_gb_s"] = lin_rounds(os.path.join(D, name))
    return r


def memchecks(name):
    return {os.path.basename(f): [ln.strip() for ln in open(f) if "ERROR SUMMARY" in ln]
            for f in sorted(glob.glob(os.path.join(D, name, "san-*.txt")))}


out = {
    "session": "s74, 2026-12-06",
    "wga": call("wga", "k_wg8's parts' sums by st.async, early form (mbarrier initialised at the start, slots after "
                "the weight scales): new against a0 (DSV4_WG8_ASYNC=0, that branch's knob); " + LIN + "; decode "
                + DECODE_OVL_WHAT),
    "lpa": call("lpa", "every K-split linear's sums by st.async (mma_finish, wg_store; k_wg8 early): new against a0 "
                "(DSV4_LIN_ASYNC=0); " + LIN + "; decode " + DECODE_OVL_WHAT + "; the warm 4,096-token prefill"),
    "wgl": call("wgl", "k_wg8's two forms in one binary: new (late, landed: the mbarrier initialised at the end, the "
                "slots in the ring), early (DSV4_WG8_PUSH_EARLY=1), a0 (DSV4_LIN_ASYNC=0); " + LIN + "; decode "
                + DECODE_OVL_WHAT),
    "kt": {"what": "node traces of the 64-step decode (scripts/gpu_ktrace.sh, bench/ktrace.py): batch 1, batch 16, "
           "batch 1 with DSV4_LIN_ASYNC=0", "machine": H100,
           "steps": {t: ktrace_step(os.path.join(D, "kt", f"kt-{t}.txt")) for t in ("b1", "b16", "a0-b1")}},
}
for c in ("wga", "lpa"):
    out[c]["suite"] = suite(D, c)
    out[c]["bits"] = call_lines(D, c, "bits.txt")
    out[c]["memcheck"] = memchecks(c)
out["lpa"]["prefill_4096"] = prefills(os.path.join(D, "lpa"))
out["lpa"]["first_run"] = ("failed every launch of k_mma_fp8<4, false> (invalid argument: 48 KB of static + dynamic "
                           "shared memory without opting in, passed by a static 8-byte mbarrier): lpa/first/")
out["wgl"]["bits"] = call_lines(D, "wgl", "bits.txt")
out["wgl"]["memcheck"] = memchecks("wgl")
print(__import__("json").dumps(out, indent=1, ensure_ascii=False))

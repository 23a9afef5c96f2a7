#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s72: the experts' transposed words landed, the attention's and
the indexer's working memory reserved at engine open) as one JSON:
    python3 bench/results/2026-12-06-s72/summary.py > bench/results/mixed-2026-12-06-s72.json
Standard library only."""
import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import DECODE_OVL_WHAT, call_lines, call_rounds  # noqa: E402

H100 = "H100 80GB HBM3, 1,980 MHz; asked of an H200"


def gz_lines(path, pat):
    """The lines of a gzipped log that match pat, stripped."""
    return [ln.strip() for ln in gzip.open(path, "rt") if re.search(pat, ln)] if os.path.exists(path) else []


W = os.path.join(D, "wr")
CTX = re.compile(r"decode 16 steps: ([\d.]+) ms/step, [\d.]+ tok/s, ([\d.]+) ms/step from the third")
ctx = {}
for f in sorted(os.listdir(os.path.join(W, "ctx"))):
    m = re.match(r"ctx-(\w+)-(\d+)\.txt", f)
    if m:
        r = CTX.search(open(os.path.join(W, "ctx", f)).read())
        ctx.setdefault(m.group(2), {})[m.group(1)] = float(r.group(2)) if r else None
out = {
    "session": "s72, 2026-12-06",
    "wr": {"what": "16770d93 (moew2's experts layout, a5b8b567; the attention's and the indexer's working memory "
                   "reserved at engine open, cf51feac) against c34e4e77 (base): test_work_reserve, test_gpu_vs_cpu, "
                   "test_golden and test_ep on the GPU, the logits byte for byte; " + DECODE_OVL_WHAT +
                   " at batch 1 / 16, one round; then (ctx/) decode steps of 2 Flash-shaped layers at a 1,040,000- "
                   "and a 131,072-token context (bench_cpu --context, batch 4 / 16, 16 steps), ms a step from the "
                   "third",
           "machine": H100,
           "work_reserve": gz_lines(os.path.join(W, "work_reserve.txt.gz"), r"growths|open at|PASSED|FAILED"),
           "tests": {t: gz_lines(os.path.join(W, t + ".txt.gz"), r" exit |PASSED|FAILED")
                     for t in ("gpu_vs_cpu", "golden_cuda", "ep_cuda")},
           "bits": call_lines(D, "wr", "bits.txt"), "decode_ms": call_rounds(D, "wr"),
           "long_context_ms": ctx},
}
MEM = re.compile(r"([\d.]+) GiB of working memory for the attention and the indexer \((\d+) tokens a step to a context "
                 r"of (\d+)\)")
POOL = re.compile(r"KV pool from [\d.]+ of ([\d.]+) GiB free")
mem = []
for f in sorted(os.listdir(os.path.join(D, "mem"))):
    if f.endswith(".log"):
        text = open(os.path.join(D, "mem", f)).read()
        m, pool = MEM.search(text), POOL.search(text)
        if m:
            mem.append({"tokens_a_step": int(m.group(2)), "context": int(m.group(3)), "reserved_gib": float(m.group(1)),
                        "free_for_the_pool_gib": float(pool.group(1)) if pool else None})
out["mem"] = {"what": "2db192bf: dsv4 serve on 4 Flash-shaped layers (--fill-random, 16 running requests) at four "
                      "context / chunk settings: the start-up log's reservation for the attention and the indexer, "
                      "and the free memory the KV pool is then sized from",
              "machine": H100, "startup": sorted(mem, key=lambda r: (r["context"], -r["tokens_a_step"]))}
T2 = os.path.join(D, "mem", "test2")
out["mem"]["test_work_reserve_131072"] = {
    "what": "a9d052dd: test_work_reserve with its impossible case at 131,072 tokens a step, then under compute-sanitizer "
            "memcheck (API errors not reported)",
    "lines": [ln.strip() for f in ("work_reserve.txt", "san-work_reserve.txt") if os.path.exists(os.path.join(T2, f))
              for ln in open(os.path.join(T2, f)) if re.search(r"open at|PASSED|FAILED|ERROR SUMMARY|exit", ln)]}
print(json.dumps(out, indent=1, ensure_ascii=False))

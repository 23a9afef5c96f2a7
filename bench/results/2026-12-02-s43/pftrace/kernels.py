#!/usr/bin/env python3
"""The timed prefill's kernels by name from a bench/ktrace.c CSV of `bench_cpu ... --warm-prefill`: the
kernels outside graphs from the second prefill's embedding (the warm-up's is the first) to the first decode
graph's kernel, tabled: count, summed duration and summed advance (how far each
kernel moves the completion frontier: the advances add up to the burst's span, overlapping streams counted
once), by advance.
    python3 kernels.py kt-pf-ours.csv.gz [TOP]"""
import csv
import gzip
import re
import subprocess
import sys

rows, graph_starts = [], []
with gzip.open(sys.argv[1], "rt") as f:
    for r in csv.DictReader(f):
        if r["name"].startswith("("):
            continue
        if r["graph_id"] != "0":
            graph_starts.append(int(r["start_ns"]))
            continue
        rows.append((int(r["start_ns"]), int(r["end_ns"]), r["name"]))
rows.sort()
# each prefill starts with its embedding (decode steps run as graphs): the timed one is the second
emb = [r[0] for r in rows if "k_embed16" in r[2]]
t0 = emb[1]
t1 = min([g for g in graph_starts if g > t0], default=max(r[1] for r in rows) + 1)
b = [r for r in rows if t0 <= r[0] < t1]
names = sorted({r[2] for r in b})
dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
short = {n: re.sub(r"\(.*", "", d) for n, d in zip(names, dem)}
agg = {}
front = None
for s, e, n in sorted(b, key=lambda r: r[1]):
    adv = e - front if front is not None and e > front else (e - s if front is None else 0)
    front = e if front is None else max(front, e)
    a = agg.setdefault(short[n], [0, 0, 0])
    a[0] += 1
    a[1] += e - s
    a[2] += adv
span = max(r[1] for r in b) - min(r[0] for r in b)
print(f"timed prefill: {len(b)} kernels, span {span / 1e6:.2f} ms, summed durations {sum(a[1] for a in agg.values()) / 1e6:.2f} ms")
print(f"{'kernel':60s} {'count':>6s} {'dur ms':>8s} {'adv ms':>8s} {'adv %':>6s}")
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
for n, a in sorted(agg.items(), key=lambda kv: -kv[1][2])[:top]:
    print(f"{n[:60]:60s} {a[0]:6d} {a[1] / 1e6:8.2f} {a[2] / 1e6:8.2f} {100 * a[2] / span:6.1f}")

#!/usr/bin/env python3
"""The routed experts' block timeline (a build with -DCMAKE_CUDA_FLAGS=-DMOE_TRACE, DSV4_MOE_TRACE=N: the lines
"moetrace KIND SM T0 T1" of one call, microseconds from its first block's entry) as a summary per kernel -
blocks, first entry, last exit, block durations (median, 10th / 90th percentile) - and the blocks resident
per microsecond bucket, so a kernel's ramp, tail and the gaps between launches show:
    python3 bench/moe_trace.py TRACE_FILE[.gz] [--bucket US]
Standard library only."""
import argparse
import gzip
import statistics
import sys

NAMES = {0: "plan", 1: "gate/up", 2: "down"}


def name(kind):
    return NAMES.get(kind, f"pack K={kind - 100000}" if kind >= 100000 else str(kind))


def records(path):
    """The trace's blocks (kind, SM, entry us, exit us); path may be gzipped."""
    recs = []
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        for line in f:
            p = line.split()
            if len(p) == 5 and p[0] == "moetrace":
                recs.append((int(p[1]), int(p[2]), float(p[3]), float(p[4])))
    return recs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", help="stderr of the traced call (.gz too)")
    ap.add_argument("--bucket", type=float, default=1.0, help="microseconds a bucket of the residency table")
    a = ap.parse_args()
    recs = records(a.trace)
    if not recs:
        sys.exit("no moetrace lines")
    kinds = sorted({r[0] for r in recs}, key=lambda k: min(r[2] for r in recs if r[0] == k))
    print(f"{'kernel':<14} {'blocks':>6} {'SMs':>4} {'first in':>9} {'last in':>9} {'last out':>9} "
          f"{'dur p10':>8} {'median':>8} {'p90':>8}")
    for k in kinds:
        rs = [r for r in recs if r[0] == k]
        d = sorted(r[3] - r[2] for r in rs)
        q = lambda p: d[min(len(d) - 1, int(p * len(d)))]  # noqa: E731
        print(f"{name(k):<14} {len(rs):>6} {len({r[1] for r in rs}):>4} {min(r[2] for r in rs):>9.2f} "
              f"{max(r[2] for r in rs):>9.2f} {max(r[3] for r in rs):>9.2f} {q(0.1):>8.2f} "
              f"{statistics.median(d):>8.2f} {q(0.9):>8.2f}")
    end = max(r[3] for r in recs)
    nb = int(end / a.bucket) + 1
    print(f"\nblocks resident per {a.bucket:g} us (columns: {', '.join(name(k) for k in kinds)})")
    for b in range(nb):
        lo, hi = b * a.bucket, (b + 1) * a.bucket
        row = [sum(1 for r in recs if r[0] == k and r[2] < hi and r[3] > lo) for k in kinds]
        print(f"{lo:8.1f} " + " ".join(f"{c:6d}" for c in row))


if __name__ == "__main__":
    main()

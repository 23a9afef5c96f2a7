#!/usr/bin/env python3
"""Per-kernel time of decode steps from ncu's per-kernel summary: which kernels a step launches, how often
and for how long each (each kernel timed alone by ncu's replay: no overlap between launches).

On the GPU machine (the .gpu bundle unpacked, scripts/gpu_env.sh sourced), e.g. 8 Flash layers at batch 1,
a 1-token prefill and 2 decode steps, op by op:

    ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \\
        $B/bench_cpu -m /tmp/f8 --prompt 1 --decode 2 --batch 1 --backend cuda --numerics reference \\
        --fill-random --no-graphs > sum-b1.txt

then, here or there:

    python3 bench/ncu_kernel_table.py --steps 3 sum-b1.txt [more.txt ...]   (a .gz is read too)

Prints, per file, one line per kernel name (template arguments and launch shapes merged), largest total
first: launches per step, microseconds per step, microseconds per launch. --steps divides the counts and
totals (default 1: the whole run). --exclude REGEX leaves kernels out by name (default: synth_fill_kernel,
the load-time weight fill of --fill-random, not part of a step; '' keeps every kernel). Python's standard
library only.
"""
import argparse
import gzip
import re
import sys

HEAD = re.compile(r"^\s+(\S.*?)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\).*Invocations (\d+)")
METRIC = re.compile(r"^\s+gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)\s+([\d.,]+)\s+([\d.,]+)")
UNIT_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6}


def kernels(text):
    """(name, launches, average microseconds) for every kernel shape in the summary."""
    out, cur = [], None
    for line in text.splitlines():
        m = HEAD.match(line)
        if m:
            cur = (m.group(1), int(m.group(2)))
            continue
        m = METRIC.match(line)
        if m and cur:
            unit = m.group(1)
            if unit not in UNIT_US:
                raise SystemExit(f"ncu_kernel_table: unknown time unit {unit!r}")
            out.append((cur[0], cur[1], float(m.group(4).replace(",", "")) * UNIT_US[unit]))
            cur = None
    return out


def base_name(kernel):
    """The kernel's name without 'void', its template arguments and its parameter list."""
    return re.sub(r"[<(].*", "", kernel).replace("void ", "").strip()


def table(rows, steps):
    agg = {}
    for k, n, avg in rows:
        a = agg.setdefault(base_name(k), [0, 0.0])
        a[0] += n
        a[1] += n * avg
    lines = []
    for name, (n, total) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"{name:32s} {n / steps:8.1f}/step {total / steps:10.1f} us/step {total / n:8.2f} us each")
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=float, default=1.0, help="divide counts and totals by this many steps")
    ap.add_argument("--exclude", default="^synth_fill_kernel$", help="regex of kernel names to leave out")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    if a.steps <= 0:
        raise SystemExit("ncu_kernel_table: --steps must be positive")
    for f in a.files:
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt") as fh:
            rows = kernels(fh.read())
        if a.exclude:
            rows = [r for r in rows if not re.search(a.exclude, base_name(r[0]))]
        if not rows:
            raise SystemExit(f"ncu_kernel_table: {f}: no kernels with gpu__time_duration.sum")
        launches = sum(n for _, n, _ in rows)
        print(f"== {f}: {launches} launches, {sum(n * x for _, n, x in rows) / a.steps:.1f} us per step "
              f"(--steps {a.steps:g}), each kernel alone")
        print("\n".join(table(rows, a.steps)))


if __name__ == "__main__":
    main(sys.argv[1:])

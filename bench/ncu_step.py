#!/usr/bin/env python3
"""One decode step's kernels, each timed alone: the CSV of

    ncu --clock-control none --graph-profiling node --csv --print-units base \\
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size \\
        bench_cpu ... --decode 3 > ncu.csv

(graph nodes profiled one by one; the weight fill's kernels may be in it: they are left out) as a table per kernel
(calls, microseconds, DRAM bytes read, GB/s) of the step between the last two sampling kernels, and, with
--list N, the step's first N kernels in launch order (grid, microseconds, MB read, stream). The sum of the
kernels' own times against the step's time in the graph tells how much of the step is launches and
dependencies. Standard library only.
    python3 bench/ncu_step.py ncu.csv[.gz] [--list N]"""
import argparse
import collections
import csv
import gzip
import sys


def step_kernels(path):
    """The kernels of the run's last whole decode step (between its last two k_sample launches), in launch
    order: dicts of name, grid, stream and the metrics by name; path may be gzipped."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        rows = [line for line in f if line.startswith('"')]
    ks = collections.OrderedDict()
    for r in csv.DictReader(rows):
        d = ks.setdefault(int(r["ID"]), {"name": r["Kernel Name"], "grid": r["Grid Size"], "stream": r["Stream"]})
        v = r["Metric Value"].replace(",", "")
        try:
            d[r["Metric Name"]] = float(v)
        except ValueError:
            d[r["Metric Name"]] = 0.0
    ks = [k for k in ks.values() if not k["name"].startswith("synth_fill")]
    samples = [i for i, k in enumerate(ks) if k["name"].startswith("k_sample")]
    if len(samples) < 2:
        sys.exit("fewer than two k_sample launches: run at least 2 decode steps")
    return ks[samples[-2] + 1:samples[-1] + 1]


def us(k):
    return k.get("gpu__time_duration.sum", 0.0) / 1e3


def mb(k):
    return k.get("dram__bytes_read.sum", 0.0) / 1e6


def short(k):
    return k["name"].split("(")[0].replace("void ", "")


def per_kernel(step):
    """kernel name (template arguments kept) -> [calls, us, MB read], largest total first."""
    agg = collections.OrderedDict()
    for k in step:
        g = agg.setdefault(short(k), [0, 0.0, 0.0])
        g[0] += 1
        g[1] += us(k)
        g[2] += mb(k)
    return collections.OrderedDict(sorted(agg.items(), key=lambda kv: -kv[1][1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--list", type=int, default=0, help="print the step's first N kernels in launch order")
    a = ap.parse_args()
    step = step_kernels(a.csv)
    print(f"a decode step: {len(step)} kernels, {sum(map(us, step)):.1f} us alone, "
          f"{sum(map(mb, step)):.1f} MB read from DRAM")
    print(f"{'kernel':44} {'calls':>5} {'us':>8} {'us/call':>8} {'MB':>8} {'GB/s':>7}")
    for n, (c, t, m) in per_kernel(step).items():
        print(f"{n[:44]:44} {c:5d} {t:8.1f} {t / c:8.2f} {m:8.1f} {m / t * 1e3 if t else 0:7.0f}")
    if a.list:
        print(f"\n{'kernel':44} {'grid':>14} {'us':>7} {'MB':>7} stream")
        for k in step[:a.list]:
            print(f"{short(k)[:44]:44} {k['grid']:>14} {us(k):7.2f} {mb(k):7.2f} {k['stream']}")


if __name__ == "__main__":
    main()

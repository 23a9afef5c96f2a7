#!/usr/bin/env python3
"""A device call's attention tables side by side: the attn-VARIANT-ROUND.txt files gpu_call.sh's call_kernels
writes (bench_kernels --attn-only), read with bench/results/summary_lib.py, as one line a (layer, context,
batch): each variant's µs a call by round, and the first variant against the last in %:

    python3 bench/attn_ab.py DIR      # e.g. $R in a run.sh: call_attn_ab after call_kernels attn ...

The variants come in call_kernels' order when named on the command line (python3 bench/attn_ab.py DIR new
base), else sorted. Standard library only."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
from summary_lib import attn, table_rounds  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d = os.path.abspath(sys.argv[1])
    rows = table_rounds(os.path.dirname(d), os.path.basename(d), attn)
    for row, by_b in rows.items():
        for b, by_v in by_b.items():
            names = sys.argv[2:] or sorted(by_v)
            vs = [v for v in names if v in by_v]
            line = [row, b] + [f"{v} " + " ".join(f"{x:.2f}" for x in by_v[v]) for v in vs]
            if len(vs) > 1:
                first, last = sum(by_v[vs[0]]) / len(by_v[vs[0]]), sum(by_v[vs[-1]]) / len(by_v[vs[-1]])
                line.append("%+.1f%%" % (100 * (first / last - 1)))
            print("  ".join(line))


if __name__ == "__main__":
    main()

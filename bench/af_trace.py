#!/usr/bin/env python3
"""k_attn_one's phases, from the output of a build with -DAF_TRACE (attn.cu: thread 0 of each block of token
0's first head group stamps clock64 at each phase's end and prints one line of 16 cycle counts):

    cmake -S . -B build-trace -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DAF_TRACE
    cmake --build build-trace --target bench_kernels
    build-trace/bench_kernels --attn-only --batch 1 --reps 8 > trace.txt      # on the GPU
    python3 bench/af_trace.py trace.txt[.gz]       # --before-s59: a trace of the kernel before s59

Per (kind, row count): the median over calls of each phase's cycles, a column per part, and the sum of the
phases after griddepcontrol.wait (what is before it overlaps the kernel before under programmatic dependent
launch; the printing makes the calls slow and the wait before each call long, so the wait is not shown: only
the cycles between stamps mean anything). Where the build also stamps each warp's lane 0 in the weights phase
("aftracew" lines: wip/one-weights' kernel; --w5: s61 rot/'s and icache/'s five-stamp builds), that phase by warp,
the slowest and the fastest. Standard library only."""
import gzip
import re
import statistics
import sys

# the stamps since s59's per-part weights (one cluster barrier); --before-s59: the earlier kernel's
PHASES = ["pre-wait", "wait", "idx/addr", "issue rows", "q", "copy wait", "scores", "max+sum+wts", "pv",
          "sums+barrier", "join", "combine", "exit", "-", "-", "-"]
# s61: each warp's lane 0 in "max+sum+wts" (the last: the wait at the phase's __syncthreads); --w5: s61 rot/'s and
# icache/'s traces (the kernel before s61's change), whose AF_REP2 build ran the phase twice (its "sync": the second)
W_PHASES = ["weights", "remote st", "sync"]
W_PHASES_5 = ["max", "sum+wts", "remote st", "zero head", "sync"]
PHASES_BEFORE_S59 = ["pre-wait", "wait", "idx/addr", "issue rows", "q", "copy wait", "scores", "max+barrier",
                     "remote max", "max sync", "den", "weights", "pv", "sums+barrier", "combine", "exit"]


def main():
    args = [a for a in sys.argv[1:] if a not in ("--before-s59", "--w5")]
    w_phases = W_PHASES_5 if "--w5" in sys.argv[1:] else W_PHASES
    phases = PHASES_BEFORE_S59 if "--before-s59" in sys.argv[1:] else PHASES
    if len(args) != 1:
        sys.exit(__doc__)
    path = args[0]
    calls = {}
    warps = {}  # (kind, nr) -> part -> warp -> [stamps a call]
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", errors="replace") as f:
        for line in f:
            m = re.search(r"aftrace kind (\d+) nr (\d+) p (\d+) np (\d+) cyc((?: -?\d+){16})", line)
            if m:
                d = [int(x) for x in m.group(5).split()]
                calls.setdefault((int(m.group(1)), int(m.group(2))), {}).setdefault(int(m.group(3)), []).append(d)
            m = re.search(r"aftracew kind (\d+) nr (\d+) p (\d+) w (\d+) cyc((?: -?\d+)+)", line)
            if m:  # a warp's i-th line is its i-th call's
                d = [int(x) for x in m.group(5).split()]
                warps.setdefault((int(m.group(1)), int(m.group(2))), {}).setdefault(int(m.group(3)), {}).setdefault(
                    int(m.group(4)), []).append(d)
    if not calls:
        sys.exit("no aftrace lines (a build with -DAF_TRACE prints them)")
    for (kind, nr), parts in sorted(calls.items()):
        ps = sorted(parts)
        print("%s, %d rows: %d calls; cycles, the median over calls, parts %s" %
              ({1: "CSA", 2: "HCA"}.get(kind, "kind %d" % kind), nr, len(parts[ps[0]]), " ".join(map(str, ps))))
        for i, name in enumerate(phases):
            if i == 1 or name == "-":
                continue
            print("  %-13s" % name + "".join("%7d" % statistics.median(d[i] for d in parts[p]) for p in ps))
        tot = [statistics.median(sum(d[2:]) for d in parts[p]) for p in ps]
        print("  %-13s" % "after wait" + "".join("%7d" % x for x in tot) + "   (%.2f us at 1.98 GHz, the largest)" %
              (max(tot) / 1980.0))
        wk = warps.get((kind, nr))
        if wk:  # s61's stamps in the weights phase, each warp's lane 0: the slowest and the fastest warp
            print("  the weights phase by warp (median over calls of the slowest / fastest warp):")
            by_call = {}  # part -> [[each warp's stamps] a call]
            for p in ps:
                byw = wk.get(p, {})
                n = min((len(v) for v in byw.values()), default=0)
                by_call[p] = [[byw[w][c] for w in byw] for c in range(n)]
            for i, name in enumerate(w_phases):
                row = ""
                for p in ps:
                    cs = by_call[p]
                    hi = statistics.median(max(d[i] for d in ws) for ws in cs) if cs else 0
                    lo_ = statistics.median(min(d[i] for d in ws) for ws in cs) if cs else 0
                    row += "%10s" % ("%d/%d" % (hi, lo_))
                print("    %-11s" % name + row)


if __name__ == "__main__":
    main()

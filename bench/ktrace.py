#!/usr/bin/env python3
"""Where a graph replay's time goes, kernel by kernel, from bench/ktrace.c's CSV (CUPTI's start and end of
every kernel, each graph node included):
    python3 bench/ktrace.py TRACE.csv[.gz] [--graph ID] [--nodes] [--skip N] [--replay N [--range A:B]]

A replay (a step) is the kernels of one graph launch (one correlation id), or of one launch of each piece
where the step was captured in pieces (graph_cut: the graphs replayed equally often). Sorted by end, each kernel's *advance* is how
far it moves the replay's completion frontier (its end minus the latest end before it; 0 for a kernel that
ends inside another's time, as a second queue's usually do): the advances add up to the replay's span, so
they say what the step is made of, PDL's overlaps and the gaps between launches included — what `ncu`, which
times each kernel alone, cannot. `lead` is how long before the frontier a kernel started (its prologue under
PDL); `dur` its own start-to-end. Medians over the replays (the first --skip left out, default 2), per graph
node (--nodes: the node table in launch order) and per kernel name. The graph timed is the one replayed most
(or --graph ID alone). Names are demangled with c++filt where the machine has it. Standard library only."""
import argparse
import collections
import csv
import gzip
import shutil
import statistics
import subprocess
import sys


def read(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("start_ns", "end_ns", "stream", "graph_id", "graph_node_id", "correlation"):
            r[k] = int(r[k])
    return rows


def demangle(names):
    names = sorted(set(names))
    if shutil.which("c++filt"):
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
        if len(out) >= len(names):
            return {n: short(d) for n, d in zip(names, out)}
    return {n: n for n in names}


def short(d):
    """k_moe16<4, 1, 0, 1, 1, 8>(wdesc const*, ...) -> k_moe16<4, 1, 0, 1, 1, 8>"""
    if d.startswith("("):
        return d  # (graph), (memcpy ...), (api ...)
    depth = 0
    for i, ch in enumerate(d):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return d[:i]
    return d


def steps(graphs, only=None):
    """A step's graph launches: the graphs replayed most often, equally often (a step captured in pieces,
    graph_cut: one graph a piece, created in capture order, so the lowest id is the first piece), or the
    graph `only`. Returns (their ids, the steps: each the records of its launches, in order)."""
    if only is not None:
        gids = [only]
    else:
        top = max(len(v) for v in graphs.values())
        gids = sorted(g for g, v in graphs.items() if len(v) == top)
    launches = sorted(((g, c, min(k["start_ns"] for k in graphs[g][c])) for g in gids for c in graphs[g]),
                      key=lambda x: x[2])
    out = []
    for g, c, _ in launches:
        if g == gids[0] or not out:
            out.append([])
        out[-1].extend(graphs[g][c])
    return gids, out


def between(outside, spans, names):
    """A step between two replays: the replay's span, then what ran outside graphs (`outside`, by start) from
    its end to the next replay's start (kernels, copies: start and end from the replay's end), medians over
    the steps; spans: each replay's (start, end), in order."""
    steps, seqs = [], []
    for (s0, e0), (s1, _) in zip(spans, spans[1:]):
        steps.append(((s1 - s0) / 1e3, (e0 - s0) / 1e3, (s1 - e0) / 1e3))
        seqs.append([(names.get(r["name"], r["name"]), (r["start_ns"] - e0) / 1e3, (r["end_ns"] - e0) / 1e3)
                     for r in outside if e0 <= r["start_ns"] < s1])
    if not steps:
        return
    med = statistics.median
    print(f"step (replay start to the next's) {med(x[0] for x in steps):.1f} us: the replay {med(x[1] for x in steps):.1f}, "
          f"from its end to the next's start {med(x[2] for x in steps):.1f} (medians of {len(steps)})")
    n = collections.Counter(len(q) for q in seqs).most_common(1)[0][0]
    same = [q for q in seqs if len(q) == n]
    for i in range(n):
        print(f"    {same[0][i][0][:50]:<50} {med(q[i][1] for q in same):8.1f} .. {med(q[i][2] for q in same):8.1f} us "
              f"after the replay's end")


def one_step(outside, spans, n, names):
    """Every record outside graphs (kernels, copies, host calls) from replay n's start to replay n+1's, in us
    from n's end."""
    if n + 1 >= len(spans):
        sys.exit(f"ktrace.py: --step {n}: only {len(spans)} replays")
    (s0, e0), (s1, _) = spans[n], spans[n + 1]
    print(f"\nreplay {n}: {(s0 - e0) / 1e3:.1f} .. 0 us, the next starts at {(s1 - e0) / 1e3:.1f}")
    for r in (r for r in outside if s0 <= r["start_ns"] < s1):
        print(f"    {(r['start_ns'] - e0) / 1e3:9.1f} .. {(r['end_ns'] - e0) / 1e3:9.1f}  {names.get(r['name'], r['name'])[:70]}")


def timeline(reps, spans, n, rng, names):
    """Replay n's kernels (after --skip) in launch order: start and end in us from the replay's start, duration,
    stream, grid - where a step's time went in that one replay (the medians mix steps that differ: every fourth
    decode step emits the CSA layers' compressed rows)."""
    if not 0 <= n < len(reps):
        sys.exit(f"ktrace.py: --replay {n}: {len(reps)} replays after --skip")
    t0 = spans[n][0]
    ks = sorted(reps[n], key=lambda k: k["start_ns"])
    lo, hi = 0, len(ks)
    if rng:
        a, _, b = rng.partition(":")
        lo, hi = int(a or 0), min(int(b or len(ks)), len(ks))
    print(f"\nreplay {n}: kernels {lo}..{hi - 1} of {len(ks)} in launch order, us from its start")
    print(f"{'#':>4} {'start':>9} {'end':>9} {'dur':>7} {'stream':>6} {'grid':>12} kernel")
    for i, k in enumerate(ks[lo:hi], lo):
        print(f"{i:4d} {(k['start_ns'] - t0) / 1e3:9.2f} {(k['end_ns'] - t0) / 1e3:9.2f} "
              f"{(k['end_ns'] - k['start_ns']) / 1e3:7.2f} {k['stream']:6d} {k['grid']:>12} {names[k['name']][:60]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--graph", type=int, help="the graph id to time (default: the one replayed most)")
    ap.add_argument("--nodes", action="store_true", help="print every node of the replay in launch order")
    ap.add_argument("--skip", type=int, default=2, help="replays to leave out at the start (warm-up)")
    ap.add_argument("--step", type=int, help="list every record from replay N's start to replay N+1's start")
    ap.add_argument("--replay", type=int, help="print replay N's kernels (after --skip) with starts and ends")
    ap.add_argument("--range", help="with --replay: its kernels A:B in launch order (either end may be left out)")
    a = ap.parse_args()

    rows = read(a.trace)
    names = demangle(r["name"] for r in rows)
    graphs = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        if r["graph_id"] and not r["name"].startswith("(memcpy"):
            graphs[r["graph_id"]][r["correlation"]].append(r)
    if not graphs:
        sys.exit("ktrace.py: no graph replays in the trace")
    gids, reps = steps(graphs, a.graph)
    reps = reps[a.skip:]
    if not reps:
        sys.exit(f"ktrace.py: graph(s) {gids} have no replays after --skip {a.skip}")
    spans = [(min(k["start_ns"] for k in r), max(k["end_ns"] for k in r)) for r in reps]  # reps: in launch order
    outside = sorted((r for r in rows if not r["graph_id"]), key=lambda r: r["start_ns"])
    between(outside, spans, names)
    if a.step is not None:
        one_step(outside, spans, a.step, names)
    if all(len(r) == 1 and r[0]["name"] == "(graph)" for r in reps):
        return  # KTRACE_MODE=graph: no nodes
    print(f"graph(s) {gids}: {len(reps)} steps timed, {len(reps[0])} kernels each; other graphs: " +
          (", ".join(f"{g} ({len(v)} replays)" for g, v in graphs.items() if g not in gids) or "none"))
    if a.replay is not None:
        timeline(reps, spans, a.replay, a.range, names)
        return

    per_node = collections.defaultdict(lambda: {"adv": [], "lead": [], "dur": [], "gap": []})
    sums = []
    order = {}
    for rep, (t0, _) in zip(reps, spans):
        sums.append(sum(k["end_ns"] - k["start_ns"] for k in rep) / 1e3)
        front = t0
        for k in sorted(rep, key=lambda k: (k["end_ns"], k["start_ns"])):
            n = per_node[(k["graph_id"], k["graph_node_id"])]
            n["adv"].append(max(0, k["end_ns"] - front) / 1e3)
            n["lead"].append(max(0, front - k["start_ns"]) / 1e3)
            n["gap"].append(max(0, k["start_ns"] - front) / 1e3)
            n["dur"].append((k["end_ns"] - k["start_ns"]) / 1e3)
            front = max(front, k["end_ns"])
        for i, k in enumerate(sorted(rep, key=lambda k: k["start_ns"])):
            order.setdefault((k["graph_id"], k["graph_node_id"]), (i, names[k["name"]], k["grid"], k["stream"]))
    med = statistics.median
    lens = [(e - s) / 1e3 for s, e in spans]
    print(f"replay span {med(lens):.1f} us (median; {min(lens):.1f}-{max(lens):.1f}), kernels' own time "
          f"{med(sums):.1f} us")

    rows_n = []
    for node, v in per_node.items():
        i, nm, grid, stream = order[node]
        rows_n.append((i, nm, grid, stream, med(v["adv"]), med(v["lead"]), med(v["gap"]), med(v["dur"])))
    rows_n.sort()
    if a.nodes:
        print(f"\n{'#':>4} {'kernel':<44} {'grid':>12} {'stream':>6} {'adv':>7} {'gap':>6} {'lead':>6} {'dur':>7}")
        for i, nm, grid, stream, adv, lead, gap, dur in rows_n:
            print(f"{i:4d} {nm[:44]:<44} {grid:>12} {stream:6d} {adv:7.2f} {gap:6.2f} {lead:6.2f} {dur:7.2f}")

    by = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for i, nm, grid, stream, adv, lead, gap, dur in rows_n:
        b = by[nm]
        b[0] += 1
        b[1] += adv
        b[2] += dur
        b[3] += gap
        b[4] += lead
    tot = sum(b[1] for b in by.values())
    print(f"\n{'kernel':<44} {'nodes':>5} {'adv us':>8} {'% span':>6} {'adv/node':>8} {'dur/node':>8} "
          f"{'gap/node':>8} {'lead/node':>9}")
    for nm, b in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"{nm[:44]:<44} {b[0]:5d} {b[1]:8.1f} {100 * b[1] / max(tot, 1e-9):6.1f} {b[1] / b[0]:8.2f} "
              f"{b[2] / b[0]:8.2f} {b[3] / b[0]:8.2f} {b[4] / b[0]:9.2f}")
    print(f"{'(sum of the medians)':<44} {len(rows_n):5d} {tot:8.1f}")


if __name__ == "__main__":
    main()

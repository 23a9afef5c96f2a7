#!/usr/bin/env python3
"""Where a kernel's warps wait, from ncu's source page: each 1 KB region of its SASS with its share of the
warp-state samples and the largest stall reasons, then the instructions with the most samples.

    ncu --set full --import-source no -k regex:'^KERNEL$' --launch-skip S --launch-count 1 -o rep CMD ...
    ncu -i rep.ncu-rep --page source --csv --print-source sass | gzip > src.csv.gz
    python3 bench/ncu_stalls.py src.csv.gz [TOP]

(bench/results/2026-12-01-s26/one-ncu/ and one3-ncu/ hold such files.) Standard library only."""
import csv
import gzip
import sys


def sections(path):
    """(kernel name, header, rows) per kernel of the page (a profile of several launches has one each; a
    section the same as the one before it is left out)"""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        out = []
        for x in csv.reader(f):
            if x and x[0] == "Kernel Name":
                out.append([x[1] if len(x) > 1 else "?", None, []])
            elif out and out[-1][1] is None:
                out[-1][1] = x
            elif out:
                out[-1][2].append(x)
    kept = []
    for s in out:
        if not kept or (kept[-1][0], kept[-1][2]) != (s[0], s[2]):
            kept.append(s)
    return kept


def main(path, top=25):
    for name, hdr, rows in sections(path):
        print("==", name[:120])
        summary(hdr, rows, top)


def summary(hdr, rows, top):
    ia, isrc, isamp = hdr.index("Address"), hdr.index("Source"), hdr.index("Warp Stall Sampling (All Samples)")
    stall = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    base = int(rows[0][ia], 16)
    tot = sum(int(x[isamp]) for x in rows) or 1
    print("samples", tot)
    regions = {}
    for x in rows:
        d = regions.setdefault((int(x[ia], 16) - base) // 0x400, [0, {}])
        d[0] += int(x[isamp])
        for i in stall:
            if int(x[i]):
                d[1][hdr[i][6:]] = d[1].get(hdr[i][6:], 0) + int(x[i])
    for k in sorted(regions):
        s, reasons = regions[k]
        if 100 * s / tot >= 1:
            best = sorted(reasons.items(), key=lambda t: -t[1])[:3]
            print("%05x %5.1f%%  %s" % (k * 0x400, 100 * s / tot, " ".join("%s:%d" % b for b in best)))
    print("instructions with the most samples")
    for x in sorted(rows, key=lambda x: -int(x[isamp]))[:top]:
        best = sorted(((hdr[i][6:], int(x[i])) for i in stall if int(x[i])), key=lambda t: -t[1])[:2]
        print("%05x %5.1f%%  %-50s %s" % (int(x[ia], 16) - base, 100 * int(x[isamp]) / tot, x[isrc].strip()[:50],
                                          best))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25)

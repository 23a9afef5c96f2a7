#!/usr/bin/env python3
"""s61 pvw2/: k_attn_pvw's walk on wip/pvw-wg, its control flow emulated line for line (dsv4_attn_part_lo's parts,
each warpgroup's rows r0 .. r1, its stages and k16 steps, where it closes a part): for every row count from 1 to
3,999, the parts each of NW = 2 or 4 warpgroups closes, with their steps, in warpgroup order, must be the one
warpgroup's - the same steps a part, each part once, in part order - so that warpgroup 0's sums in part order are
the same operations. Standard library only; exits 1 on a difference."""
import sys
P = 8

def lo(nr, p):
    return nr if p >= P else (nr * p // P) & ~15

def walk(nr, NW, KT=64):
    KS, PW = KT // 16, P // NW
    out = []  # (part, [steps]) in closing order
    for wg in range(NW):
        hi = lambda q: lo(nr, q + 1)
        r0 = 0 if NW == 1 else lo(nr, wg * PW)
        r1 = nr if NW == 1 else hi(wg * PW + PW - 1)
        ns, nst, s00 = (r1 + 15) >> 4, (r1 - r0 + KT - 1) // KT, r0 >> 4
        p1 = P - 1 if NW == 1 else wg * PW + PW - 1
        p = 0 if NW == 1 else wg * PW
        while p < p1 and hi(p) <= r0:
            p += 1
        steps = []
        for i in range(nst):
            for k in range(KS):
                s = s00 + KS * i + k
                if s >= ns:
                    break
                steps.append(s)
                if 16 * (s + 1) >= hi(p):
                    out.append((p, steps))
                    steps = []
                    p += 1
                    while p < p1 and hi(p) <= 16 * (s + 1):
                        p += 1
        assert not steps, (nr, NW, wg, steps)
    return out

bad = 0
for nr in range(1, 4000):
    ref = walk(nr, 1)
    for NW in (2, 4):
        got = walk(nr, NW)
        if got != ref:
            bad += 1
            if bad < 5:
                print("nr", nr, "NW", NW, "\n ref", ref, "\n got", got)
print("row counts 1-3999, NW 2 and 4:", "the same parts, steps and order" if not bad else "%d differ" % bad)
sys.exit(1 if bad else 0)

#!/usr/bin/env python3
"""s60 mdr/: k_attn_md16's old order (a lane's 8 parts in registers, each pair's part by comparison) against the new
one (a running max / sum a lane, restarted where its part changes, each pair's part from its 16-row block's table),
emulated in float32 over 300 row counts: the maxima, the per-lane sums before the butterflies and the weights
must be bit for bit the same. Needs numpy: python3 bench/results/2026-12-04-s60/mdr/md16_order.py"""
import numpy as np
f32 = np.float32
def part_lo(nr, p): return nr if p >= 8 else ((nr * p) // 8) & ~15
def old(sc, nr, MD_NV=12):
    n16 = (nr + 15) & ~15
    plo = [part_lo(nr, p) for p in range(8)]
    part = lambda j: sum(1 for p in range(1, 8) if j >= plo[p])
    m = np.full((32, 8), -np.inf, dtype=f32); l = np.zeros((32, 8), dtype=f32)
    for lane in range(32):
        for r0 in range(0, n16, 64 * MD_NV):
            for k in range(MD_NV):
                j = r0 + 2 * lane + 64 * k
                if j >= nr: break
                x = max(sc[j], sc[j + 1]) if j + 1 < nr else sc[j]
                q = part(j); m[lane, q] = max(m[lane, q], x)
    M = m.max(axis=0)
    W = {}
    for lane in range(32):
        for r0 in range(0, n16, 64 * MD_NV):
            for k in range(MD_NV):
                j = r0 + 2 * lane + 64 * k
                if j >= n16: break
                q = part(j); mq = M[q]
                e0 = f32(np.exp(f32(sc[j] - mq))) if j < nr else f32(0)
                e1 = f32(np.exp(f32(sc[j + 1] - mq))) if j + 1 < nr else f32(0)
                l[lane, q] = f32(l[lane, q] + e0); l[lane, q] = f32(l[lane, q] + e1)
                W[j] = (e0, e1)
    return M, l, W
def new(sc, nr, MD_NV=12):
    n16 = (nr + 15) & ~15
    plo = [part_lo(nr, p) for p in range(8)]
    part = lambda j: sum(1 for p in range(1, 8) if j >= plo[p])
    sm = np.full((8, 32), -np.inf, dtype=f32); sl = np.zeros((8, 32), dtype=f32)
    for lane in range(32):
        run = f32(-np.inf); qp = -1
        for r0 in range(0, n16, 64 * MD_NV):
            tq = [part(r0 + 16 * b) for b in range(64)]
            for k in range(MD_NV):
                j = r0 + 2 * lane + 64 * k
                if j >= nr: break
                q = tq[4 * k + (lane >> 3)]
                x = max(sc[j], sc[j + 1]) if j + 1 < nr else sc[j]
                run = x if q != qp else max(run, x); qp = q; sm[q, lane] = run
    M = sm.max(axis=1)
    W = {}
    for lane in range(32):
        run = f32(0); qp = -1
        for r0 in range(0, n16, 64 * MD_NV):
            tq = [part(r0 + 16 * b) for b in range(64)]
            for k in range(MD_NV):
                j = r0 + 2 * lane + 64 * k
                if j >= n16: break
                q = tq[4 * k + (lane >> 3)]; mq = M[q]
                e0 = f32(np.exp(f32(sc[j] - mq))) if j < nr else f32(0)
                e1 = f32(np.exp(f32(sc[j + 1] - mq))) if j + 1 < nr else f32(0)
                run = f32(0) if q != qp else run; qp = q
                run = f32(run + e0); run = f32(run + e1); sl[q, lane] = run
                W[j] = (e0, e1)
    return M, sl.T, W
rng = np.random.default_rng(1)
bad = 0
for trial in range(300):
    nr = int(rng.choice([1, 2, 5, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 128, 160, 200, 384, 640, 700, 767, 768, 769, 800, 1152, 1500, 2000]) if trial < 150 else rng.integers(1, 2500))
    sc = (rng.standard_normal(((nr + 15) & ~15) + 64) * rng.choice([1, 4, 16])).astype(f32)
    a = old(sc, nr); b = new(sc, nr)
    ok = np.array_equal(a[0], b[0]) and np.array_equal(a[1].view(np.int32), b[1].view(np.int32)) and a[2] == b[2]
    if not ok:
        bad += 1; print("DIFF nr", nr)
print("trials 300 bad", bad)

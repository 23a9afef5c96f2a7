#!/usr/bin/env python3
"""s61 qkw/: which dimension each k16 step's slot holds, in k_attn_qk (mma.sync m16n8k16: A = q, B = the rows) and in
k_attn_qkw (wgmma m64n64k16: A = the rows from registers, B = q in shared memory as k_attn_qkw stores it), from
the kernels' index arithmetic and PTX's fragment layouts (mma.sync's and wgmma's register A: a0 / a1 rows g / g + 8
at slots 2 tq, 2 tq + 1; a2 / a3 at slots 2 tq + 8, 2 tq + 9; a B slot pair of a K-major 128-byte row: 4 bytes at
byte 4 (pair) of the step's 32 bytes). Checks that in both kernels, in every step, each slot pairs a q value and a
row value of the same dimension, and that the steps come in the same order: then each step adds the same products
in the same slots. Standard library only; exits 1 on a mismatch."""
import sys

HD = 512


def qk_reference():
    """k_attn_qk: for d0 (32 dims) the pair mma(a.x, b8.x, a.y, b8.y, k.x, k.y) then (a.z, ..., k.z, k.w); lane tq's
    uint4 holds dims d0 + 8 tq .. + 7 of q (A) and of the row (B) alike. Returns {step: {slot: (q dim, row dim)}}."""
    out = {}
    for d0 in range(0, HD, 32):
        for half in (0, 1):
            s = d0 // 16 + half
            slots = {}
            for tq in range(4):
                base = d0 + 8 * tq + 4 * half
                for e in (0, 1):
                    slots[2 * tq + e] = (base + e, base + e)          # a0 / b0: .x (.z)
                    slots[2 * tq + 8 + e] = (base + 2 + e, base + 2 + e)  # a2 / b1: .y (.w)
            out[s] = slots
    return out


def qkw():
    """k_attn_qkw: A from the row's uint4 at chunk 4 i + tq of 32-dim group i (a0 = .x, a2 = .y for step 2 i; .z, .w
    for 2 i + 1); B: group i's 16 words (w = dims 2 w, 2 w + 1 of the group) stored as chunks C_m = (u0.m, u1.m,
    u2.m, u3.m), u_n = words 4 n .. 4 n + 3, at chunks 4 (i % 2) + m of 64-dim block i / 2; step s reads block s // 4
    at chunk 2 (s % 4) (slots 0-7) and 2 (s % 4) + 1 (slots 8-15). Returns the same map."""
    # where each q word lands: (block, chunk, word in chunk)
    placed = {}
    for i in range(HD // 32):
        for m in range(4):
            for n in range(4):
                word = 4 * n + m
                placed[(i // 2, 4 * (i % 2) + m, n)] = 32 * i + 2 * word
    out = {}
    for s in range(HD // 16):
        i, half = s // 2, s % 2
        slots = {}
        for tq in range(4):
            row = 32 * i + 8 * tq + 4 * half  # .x / .z
            for e in (0, 1):
                for hi, roff in ((0, 0), (1, 2)):  # a0 (.x / .z) at slots 2 tq.., a2 (.y / .w) at 2 tq + 8..
                    slot = 2 * tq + 8 * hi + e
                    chunk = 2 * (s % 4) + hi
                    qd = placed[(s // 4, chunk, (slot % 8) // 2)] + slot % 2
                    slots[slot] = (qd, row + roff + e)
        out[s] = slots
    return out


def main():
    ref, new = qk_reference(), qkw()
    bad = 0
    for s in sorted(ref):
        for slot in range(16):
            q0, r0 = ref[s][slot]
            q1, r1 = new[s][slot]
            if q0 != r0 or q1 != r1 or (q0, r0) != (q1, r1):
                bad += 1
                if bad < 10:
                    print("step %d slot %d: k_attn_qk q %d row %d, k_attn_qkw q %d row %d" % (s, slot, q0, r0, q1, r1))
    print("%d steps x 16 slots: %s" % (len(ref), "the same dimension pairs in the same slots" if not bad else
                                       "%d mismatches" % bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

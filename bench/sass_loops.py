#!/usr/bin/env python3
"""The inner loops of CUDA kernels from their SASS: size, MMAs, and the global loads whose result a nearby
instruction waits for. Standard library only.

    cuobjdump -sass build-gpu/CMakeFiles/dsv4cuda.dir/src/backend/cuda/mma.cu.o | python3 bench/sass_loops.py [REGEX] [--kinds]

(cuobjdump comes with the device machine's CUDA toolkit; here, the one in the triton wheel from PyPI:
`pip download triton==3.1.0 --no-deps` and unzip, triton/backends/nvidia/bin/cuobjdump.) REGEX keeps the
functions whose mangled name it matches; --audit prints one line a function instead (instructions, code size,
MMAs, local-memory and generic loads / stores: where an array went to local memory or a shared-memory pointer
lost its space); --kinds adds each loop's instructions by opcode, most first (the
routed experts' decode loop: 180 of its 352 instructions decode FP4, KERNEL_NOTES "State after v50"). The
counts are static: a branch taken once a tile (k_mma_fp8s's next-tile setup, with its integer divisions) counts
as much as the MMAs it sits beside.

Per function, per inner loop (a backward branch's span with MMAs, or else global loads, holding no smaller such
span): its SASS instructions, its
HMMA / GMMA count, and for each global load into registers (LDG, not the LDGSTS of cp.async) the number of
instructions until the first one that waits on the load's scoreboard, wrapping around the loop. ptxas gives a
loop's global loads few scoreboards (often one), and a wait on a scoreboard waits for every load counted on it:
a load issued "a step ahead" whose scoreboard the next use of an older load waits on costs a full round trip a
step (k_mma_fp8s before 58fff2b: bench/results/2026-12-01-s25/). A short distance flags such a load. The wait
mask and write barrier are decoded from each instruction's control bits (the high word's bits 41-62:
stall 4, yield 1, write barrier 3, read barrier 3, wait mask 6)."""
import collections
import re
import sys

INS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/")
HI = re.compile(r"\s*/\* (0x[0-9a-f]+) \*/")
BRA = re.compile(r"BRA (?:\S+, )?0x([0-9a-f]+)")
PRED = re.compile(r"^@!?U?P[T0-9] ")


def functions(text):
    """(name, [(address, text, write barrier or None, wait mask)]) per function of cuobjdump -sass."""
    for part in re.split(r"\n\s*Function : ", text)[1:]:
        lines = part.split("\n")
        name, ins, i = lines[0].strip(), [], 1
        while i < len(lines):
            m = INS.match(lines[i])
            h = HI.match(lines[i + 1]) if m and i + 1 < len(lines) else None
            if m and h:
                ctrl = int(h.group(1), 16) >> 41
                wb = (ctrl >> 5) & 7
                ins.append((int(m.group(1), 16), m.group(2).strip(), None if wb == 7 else wb, (ctrl >> 11) & 0x3F))
                i += 2
            else:
                i += 1
        yield name, ins


def is_mma(t):
    return "HMMA" in t or "GMMA" in t


def is_load(t):
    op = PRED.sub("", t)
    return op.startswith("LDG") and not op.startswith(("LDGSTS", "LDGDEPBAR"))


def inner_loops(ins):
    """(first, last) addresses of the backward branches' spans with MMAs (or else global loads) in them that hold
    no smaller such span (a span's small nested loops without them - a division, a search - do not count)."""
    spans = set()
    for a, t, _, _ in ins:
        m = BRA.search(t)
        if m and int(m.group(1), 16) < a:
            spans.add((int(m.group(1), 16), a))

    def has(sp, f):
        return any(sp[0] <= x[0] <= sp[1] and f(x[1]) for x in ins)

    out = []
    for sp in sorted(spans):
        f = is_mma if has(sp, is_mma) else is_load if has(sp, is_load) else None
        if f and not any(o != sp and sp[0] <= o[0] and o[1] <= sp[1] and has(o, f) for o in spans):
            out.append(sp)
    return out


def load_waits(body):
    """For each global load into registers in body: instructions until the first waiting on its scoreboard."""
    out = []
    for k, (a, t, wb, _) in enumerate(body):
        if not is_load(t) or wb is None:
            continue
        op = PRED.sub("", t)
        for d in range(1, len(body) + 1):
            if (body[(k + d) % len(body)][3] >> wb) & 1:
                out.append((a, op.split()[0], d))
                break
    return out


def kinds(body):
    """The body's instructions by opcode (predicate dropped, modifiers kept), most first."""
    return collections.Counter(PRED.sub("", t).split()[0] for _, t, _, _ in body).most_common()


def audit(name, ins):
    """One line a function: its size and what its SASS should not hold where shared memory or registers were
    meant - local memory (LDL / STL: an array indexed at run time, a spill) and generic loads and stores (LD / ST
    without G or S: the compiler lost the address space; reads of shared memory that way cost more than LDS,
    and the pointer often came out of local memory too - k_attn_qk's row tiles until e762394, v65)."""
    ops = [t.split()[1] if t.startswith("@") else t.split()[0] for _, t, _, _ in ins]
    local = sum(1 for o in ops if o.startswith(("LDL", "STL")))
    generic = sum(1 for o in ops if re.match(r"(LD|ST)(\.|$)", o))
    mma = sum(1 for _, t, _, _ in ins if is_mma(t))
    print(f"{len(ins):6d} instructions {16 * len(ins) / 1024:7.1f} KB  {mma:4d} MMA  {local:3d} local  "
          f"{generic:3d} generic  {name}")


def main():
    args = [a for a in sys.argv[1:] if a not in ("--kinds", "--audit")]
    show_kinds = "--kinds" in sys.argv[1:]
    pat = re.compile(args[0]) if args else None
    for name, ins in functions(sys.stdin.read()):
        if pat and not pat.search(name):
            continue
        if "--audit" in sys.argv[1:]:
            audit(name, ins)
            continue
        rows = []
        for lo, hi in inner_loops(ins):
            body = [x for x in ins if lo <= x[0] <= hi]
            mma = sum(1 for x in body if is_mma(x[1]))
            waits = load_waits(body)
            if mma or waits:
                rows.append((lo, hi, len(body), mma, waits, kinds(body)))
        if not rows:
            continue
        print(name)
        for lo, hi, n, mma, waits, ks in rows:
            print(f"  loop {lo:05x}..{hi:05x}: {n} instructions, {mma} MMA, {len(waits)} global loads into registers")
            if show_kinds:
                print("    " + ", ".join(f"{c} {op}" for op, c in ks))
            for a, op, d in waits:
                flag = "  <- waited within a third of the loop" if d < n // 3 else ""
                print(f"    {a:05x} {op}: first wait on its scoreboard {d} instructions on{flag}")


if __name__ == "__main__":
    main()

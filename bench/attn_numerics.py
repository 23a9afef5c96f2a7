#!/usr/bin/env python3
"""How far each definition of sparse attention's reference numerics lands from exact attention (a measurement for
the change KERNEL_NOTES' **Attention** item proposes: per-part maxima, parts folded in order, so that a pipelined
kernel need not hold every score before any weight):
  current     today's (cpu.c attn_task, every GPU path): FP32 scores, their maximum over all the rows,
              weights BF16(exp(s - max)) in the numerator, the FP32 sum of exp(s - max) plus the sink's in the
              denominator;
  per-part    the rows in P parts (as am_part_lo splits them), each part's own maximum m_p, weights
              BF16(exp(s - m_p)), the part's weighted sum O_p and FP32 sum L_p; folded in part order
              (M' = max(M, m_p); A = A e^(M - M') + O_p e^(m_p - M'); L likewise), A / (L + e^(sink - M))
              (s58's proposal);
  joined      the definition s59 landed (MODEL_NOTES): the same parts and weights, joined with the largest
              maximum M: c_p = e^(m_p - M), A = sum c_p O_p, L = sum c_p L_p (FMA chains in part order);
  tiles       a hierarchical variant (KERNEL_NOTES, State after s59): within each part, 64-row tiles folded
              online as per-part folds its parts, the parts then joined as joined does;
  eager-like  an eager implementation's order: an FP32 softmax with the sink, probabilities rounded to BF16,
              multiplied into the BF16 rows with FP32 sums.
q and the rows are BF16 values (head_dim 512, one shared K = V row as DeepSeek-V4's), the scores scaled to a
standard deviation sigma, a random sink. Printed: the mean and the largest, over the trials, of
max |o - exact| / max |exact| (exact: float64). numpy only:
    python3 bench/attn_numerics.py
"""
import numpy as np

rng = np.random.default_rng(1)


def bf16(x):
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)


def part_lo(n, p, P):
    """am_part_lo: part p's first row, multiples of 16."""
    return n if p >= P else (n * p // P) & ~15


def run(N, hd, sigma, P, trials=40):
    errs = {"current": [], "per-part": [], "joined": [], "tiles": [], "eager-like": []}
    for _ in range(trials):
        q = bf16(rng.standard_normal(hd).astype(np.float32))
        K = bf16(rng.standard_normal((N, hd)).astype(np.float32))
        # scores with spread sigma: scale chosen so s ~ N(0, sigma)
        scale = np.float32(sigma / np.sqrt(hd))
        s32 = (K @ q).astype(np.float32) * scale
        sink = np.float32(rng.standard_normal() * sigma)
        s64 = s32.astype(np.float64)
        e = np.exp(s64 - s64.max()); den = e.sum() + np.exp(float(sink) - s64.max())
        exact = (e[:, None] * K.astype(np.float64)).sum(0) / den
        ref = np.abs(exact).max()
        # current reference numerics: global max, bf16 weights, fp32 sums
        M = s32.max(); ex = np.exp(s32 - M).astype(np.float32)
        d = np.float32(ex.sum(dtype=np.float32) + np.float32(np.exp(sink - M)))
        o = (bf16(ex)[:, None] * K).sum(0, dtype=np.float32) / d
        errs["current"].append(np.abs(o - exact).max() / ref)
        # per-part maxima, parts folded in order
        Mr, A, L = -np.inf, np.zeros(hd, np.float32), np.float32(0)
        for p in range(P):
            lo, hi = N * p // P, N * (p + 1) // P
            sp = s32[lo:hi]; mp = sp.max(); ep = np.exp(sp - mp).astype(np.float32)
            Op = (bf16(ep)[:, None] * K[lo:hi]).sum(0, dtype=np.float32); Lp = ep.sum(dtype=np.float32)
            Mn = max(Mr, mp); a = np.float32(np.exp(Mr - Mn)) if Mr > -np.inf else np.float32(0)
            b = np.float32(np.exp(mp - Mn))
            A = A * a + Op * b; L = L * a + Lp * b; Mr = Mn
        o = A / (L + np.float32(np.exp(sink - Mr)))
        errs["per-part"].append(np.abs(o - exact).max() / ref)
        # joined (s59's definition) and tiles (64-row tiles folded online within each part), parts as am_part_lo
        for name, tile in (("joined", 0), ("tiles", 64)):
            ms, ls, os_ = [], [], []
            for p in range(P):
                lo, hi = part_lo(N, p, P), part_lo(N, p + 1, P)
                if hi <= lo:
                    continue
                Mt, At, Lt = -np.inf, np.zeros(hd, np.float32), np.float32(0)
                for t0 in range(lo, hi, tile or hi - lo):
                    t1 = min(hi, t0 + (tile or hi - lo))
                    st = s32[t0:t1]; mt = st.max(); et = np.exp(st - mt).astype(np.float32)
                    Ot = (bf16(et)[:, None] * K[t0:t1]).sum(0, dtype=np.float32); Lt1 = et.sum(dtype=np.float32)
                    Mn = max(Mt, mt); a = np.float32(np.exp(Mt - Mn)) if Mt > -np.inf else np.float32(0)
                    b = np.float32(np.exp(mt - Mn))
                    At = At * a + Ot * b; Lt = Lt * a + Lt1 * b; Mt = Mn
                ms.append(Mt); ls.append(Lt); os_.append(At)
            M = max(ms); A = np.zeros(hd, np.float32); L = np.float32(0)
            for mp, Lp, Op in zip(ms, ls, os_):
                c = np.float32(np.exp(mp - M)); A = (c * Op + A).astype(np.float32); L = np.float32(c * Lp + L)
            o = A / (L + np.float32(np.exp(sink - M)))
            errs[name].append(np.abs(o - exact).max() / ref)
        # eager-like: fp32 softmax with the sink, probabilities to bf16, bf16 V, fp32 accumulation
        pr = ex / d
        o = (bf16(pr)[:, None] * K).sum(0, dtype=np.float32)
        errs["eager-like"].append(np.abs(o - exact).max() / ref)
    return {k: (float(np.mean(v)), float(np.max(v))) for k, v in errs.items()}


print("N hd sigma parts | method: mean / max of max|o - exact| / max|exact| over 40 trials")
for N, P in ((640, 8), (1152, 8), (160, 4), (8320, 8)):
    for sigma in (1.0, 4.0, 16.0):
        r = run(N, 512, sigma, P)
        print(N, 512, sigma, P, " | ".join(f"{k}: {m:.2e} / {x:.2e}" for k, (m, x) in r.items()))

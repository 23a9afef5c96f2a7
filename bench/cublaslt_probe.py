#!/usr/bin/env python3
"""The vendor library's block-scaled FP8 GEMM at the prefill linears' shapes, as a baseline for ours.

Times cuBLASLt's FP8 GEMM with DeepSeek's scaling - activations' E4M3 codes with one FP32 scale per token and
128 columns (act_quant), weights' E4M3 codes with one scale per 128 x 128 block - through PyTorch's
torch._scaled_mm (which calls cublasLtMatmul with CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F /
BLK128x128_32F on Hopper), beside the same shapes' per-tensor-scaled FP8 GEMM (the library's FP8 rate without
block scales) and BF16 torch.matmul. Each result is checked against the dequantised operands' FP32 product.
Runs where PyTorch sees a CUDA GPU (the device machine's image); prints one line per (shape, tokens):

  python3 bench/cublaslt_probe.py [--tokens 1024,4096] [--reps 20]

The shapes are Flash's FP8 linears (MODEL.md's tensor table): out x in.
"""
import argparse
import sys

import torch

SHAPES = [
    ("wq_a", 1024, 4096),
    ("wq_b", 32768, 1024),
    ("wkv", 512, 4096),
    ("wo_a group", 1024, 4096),
    ("wo_b", 4096, 8192),
    ("shared w1", 2048, 4096),
    ("shared w2", 4096, 2048),
    ("idx wq_b", 8192, 1024),
]


def quant_act(x):
    """act_quant: E4M3 codes and one power-of-two scale per row and 128 columns (as the reference's UE8M0)."""
    m, k = x.shape
    xb = x.view(m, k // 128, 128)
    amax = xb.abs().amax(dim=2).clamp(min=1e-30)
    s = torch.exp2(torch.ceil(torch.log2(amax / 448.0)))
    q = (xb / s.unsqueeze(2)).to(torch.float8_e4m3fn).view(m, k)
    return q, s.float()


def quant_weight(w):
    n, k = w.shape
    wb = w.view(n // 128, 128, k // 128, 128)
    amax = wb.abs().amax(dim=(1, 3)).clamp(min=1e-30)
    s = torch.exp2(torch.ceil(torch.log2(amax / 448.0)))
    q = (wb / s[:, None, :, None]).to(torch.float8_e4m3fn).view(n, k)
    return q, s.float()


def timed(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1000.0 / reps  # us


def blockwise_call(xq, xs, wq, ws):
    """The first form of torch._scaled_mm's block-scaled call this PyTorch accepts (the scales' layouts differ
    by version): returns (function, description) or (None, the errors)."""
    m, n = xq.shape[0], wq.shape[0]
    sa_forms = [("scale_a [M][K/128] outer-dim-major", xs.t().contiguous().t()), ("scale_a [M][K/128]", xs.contiguous())]
    sb_forms = [
        ("scale_b [K/128][N/128]", ws.t().contiguous()),
        ("scale_b [K/128][N/128] outer-dim-major", ws.contiguous().t()),
        ("scale_b [N/128][K/128]", ws.contiguous()),
    ]
    errs = []
    for da, sa in sa_forms:
        for db, sb in sb_forms:
            f = lambda sa=sa, sb=sb: torch._scaled_mm(xq, wq.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
            try:
                f()
                torch.cuda.synchronize()
                return f, da + ", " + db
            except Exception as e:  # noqa: BLE001 - report each form's refusal
                errs.append(f"{da}, {db}: {str(e).splitlines()[0][:160]}")
    return None, errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1024,4096")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("cublaslt_probe: no CUDA GPU; skipped")
        return 0
    dev = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} CUDA {torch.version.cuda} "
          f"cuBLAS {torch.backends.cuda.preferred_blas_library()}")
    torch.manual_seed(0)
    print(f"{'linear':<12} {'tokens':>6} {'out':>6} {'in':>5}  {'blockwise us':>12} {'TFLOP/s':>8}  "
          f"{'tensorwise us':>13} {'TFLOP/s':>8}  {'bf16 us':>8} {'TFLOP/s':>8}  {'rel err':>8}")
    form = None
    for tok in [int(t) for t in args.tokens.split(",")]:
        for name, n, k in SHAPES:
            # blocks of 128 columns (and 128 x 128 weight blocks) at different powers of two, so a scale read
            # from the wrong block shows in the error column (equal block scales would hide it)
            xs_ = torch.exp2(torch.randint(-3, 3, (tok, k // 128), device=dev).float()).repeat_interleave(128, 1)
            ws_ = torch.exp2(torch.randint(-3, 3, (n // 128, k // 128), device=dev).float())
            x = torch.randn(tok, k, device=dev) * xs_
            w = torch.randn(n, k, device=dev) * 0.02 * ws_.repeat_interleave(128, 0).repeat_interleave(128, 1)
            xq, xs = quant_act(x)
            wq, ws = quant_weight(w)
            f, info = blockwise_call(xq, xs, wq, ws)
            if f is None:
                print("blockwise scaled_mm refused in every form:")
                for e in info:
                    print("  " + e)
                return 1
            if form != info:
                form = info
                print(f"  (block-scaled call: {info})")
            # the dequantised operands' product in FP32
            xd = (xq.float().view(tok, k // 128, 128) * xs.unsqueeze(2)).view(tok, k)
            wd = (wq.float().view(n // 128, 128, k // 128, 128) * ws[:, None, :, None]).view(n, k)
            ref = xd @ wd.t()
            err = ((f().float() - ref).abs().max() / ref.abs().max()).item()
            one = torch.ones((), device=dev)
            ft = lambda: torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            xb, wb = x.bfloat16(), w.bfloat16()
            fb = lambda: xb @ wb.t()
            flop = 2.0 * tok * n * k
            tb, tt, tf = timed(f, args.reps), timed(ft, args.reps), timed(fb, args.reps)
            print(f"{name:<12} {tok:>6} {n:>6} {k:>5}  {tb:>12.1f} {flop / tb / 1e6:>8.0f}  {tt:>13.1f} "
                  f"{flop / tt / 1e6:>8.0f}  {tf:>8.1f} {flop / tf / 1e6:>8.0f}  {err:>8.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
